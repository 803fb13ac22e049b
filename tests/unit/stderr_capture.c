/* stderr captured for unit tests (stderr_capture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "stderr_capture.h"

static int saved_fd = -1;
static FILE *capture;

void stderr_capture_start(void) {
    fflush(stderr);
    capture = tmpfile();
    assert_non_null(capture);
    saved_fd = dup(STDERR_FILENO);
    assert_true(saved_fd >= 0);
    assert_true(dup2(fileno(capture), STDERR_FILENO) >= 0);
}

char *stderr_capture_end(void) {
    fflush(stderr);
    assert_true(dup2(saved_fd, STDERR_FILENO) >= 0);
    close(saved_fd);
    long n = ftell(capture);
    assert_true(n >= 0);
    rewind(capture);
    char *text = calloc(1, (size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, capture), (size_t)n);
    fclose(capture);
    capture = NULL;
    return text;
}
