/* The per-thread error slot (see error.h). */
#include "util/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char slot_msg[1024];
static _Thread_local int slot_code;

static int error_vset(int code, int with_errno, const char *fmt, va_list ap)
{
    int saved = errno;
    /* Formatted aside first: an argument may point into the slot itself
     * (repro_error_wrap is the way to add context, but a stray
     * repro_error_message() among the arguments must not garble). */
    char msg[sizeof slot_msg];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (with_errno) {
        size_t n = strlen(msg);
        snprintf(msg + n, sizeof msg - n, ": %s", strerror(saved));
    }
    memcpy(slot_msg, msg, sizeof slot_msg);
    slot_code = code;
    return -1;
}

int repro_error_set(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vset(code, 0, fmt, ap);
    va_end(ap);
    return -1;
}

int repro_error_set_errno(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vset(code, 1, fmt, ap);
    va_end(ap);
    return -1;
}

/* The least of the slot a prefix keeps when the cause is long. */
#define WRAP_PREFIX_MIN 160

int repro_error_wrap(int code, const char *fmt, ...)
{
    char cause[sizeof slot_msg], prefix[sizeof slot_msg];
    snprintf(cause, sizeof cause, "%s", repro_error_message());
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    size_t plen = strlen(prefix), clen = strlen(cause);
    size_t room = sizeof slot_msg - 1 - 2; /* the text, less ": " */
    if (plen + clen > room) {
        /* Cut the prefix to what the cause leaves, but never below its
         * minimum: a cause that long is cut at its own end instead. */
        size_t keep = clen < room - WRAP_PREFIX_MIN ? room - clen : WRAP_PREFIX_MIN;
        if (plen > keep) {
            memcpy(prefix + keep - 3, "...", 4);
            plen = keep;
        }
    }
    if (plen > room)
        plen = room;
    memcpy(slot_msg, prefix, plen);
    memcpy(slot_msg + plen, ": ", 2);
    size_t ckeep = clen < room - plen ? clen : room - plen;
    memcpy(slot_msg + plen + 2, cause, ckeep);
    slot_msg[plen + 2 + ckeep] = '\0';
    slot_code = code;
    return -1;
}

const char *repro_error_message(void)
{
    return slot_msg[0] ? slot_msg : "unknown error";
}

int repro_error_code(void)
{
    return slot_code ? slot_code : REPRO_EINVAL;
}

/* The public face of the slot (repro.h). */
const char *repro_error_last(void)
{
    return slot_msg;
}

int repro_error_last_code(void)
{
    return slot_msg[0] ? repro_error_code() : REPRO_OK;
}

void repro_error_clear(void)
{
    slot_msg[0] = '\0';
    slot_code = 0;
}
