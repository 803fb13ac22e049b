/*
 * stderr_capture.h - what a unit test's code writes to stderr (the log),
 * captured: stderr_capture_start sends file descriptor 2 to a temporary
 * file, stderr_capture_end puts it back and returns what was written.
 * One capture at a time; the text is a heap string the caller frees.
 */
#ifndef STDERR_CAPTURE_H
#define STDERR_CAPTURE_H

void stderr_capture_start(void);
char *stderr_capture_end(void);

#endif
