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
    vsnprintf(slot_msg, sizeof slot_msg, fmt, ap);
    if (with_errno) {
        size_t n = strlen(slot_msg);
        snprintf(slot_msg + n, sizeof slot_msg - n, ": %s", strerror(saved));
    }
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
