/* version.h - the version string every binary prints. REAPER_VERSION and
 * REAPER_GIT_REV come from CMake. */
#ifndef RP_VERSION_H
#define RP_VERSION_H

#define RP_VERSION_STRING REAPER_VERSION " (" REAPER_GIT_REV ")"

#endif
