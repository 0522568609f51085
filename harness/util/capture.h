/* A child's stdout and stderr passed through the parent on their way to
 * their files, bounded: each file keeps the first and the last `limit`
 * bytes its stream wrote, and a line between them says how many bytes
 * were dropped. Used by child.c (capture_limit in child.h). */
#ifndef REPRO_CAPTURE_H
#define REPRO_CAPTURE_H

#include <stdint.h>

typedef struct repro_capture repro_capture;

/* fds[1], fds[2]: the opened files (the same fd when stderr shares
 * stdout's). Takes them over and puts in their place the write ends of
 * new pipes (close-on-exec), for the child's 1 and 2; the caller closes
 * those after the fork as it would have the files. NULL with the error
 * slot set (the files closed). */
repro_capture *repro_capture_open(int fds[3], uint64_t limit);
/* Waits up to `ms` for output and moves what arrived into the files. */
void repro_capture_pump(repro_capture *cap, int ms);
/* After the child and its group are gone: moves what is left in the pipes
 * (until end of file, or until they are empty should an escaped process
 * still hold one), writes the kept tail after the note, closes and frees. */
void repro_capture_finish(repro_capture *cap);

#endif
