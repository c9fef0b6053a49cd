/* Error messages and the always-on assert. */
#include "base/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *hy_status_str(int status) {
    switch (status) {
    case HY_OK: return "ok";
    case HY_E_INVALID: return "invalid";
    case HY_E_IO: return "io";
    case HY_E_NOMEM: return "out of memory";
    case HY_E_UNSUPPORTED: return "unsupported";
    case HY_E_NOT_FOUND: return "not found";
    case HY_E_RANGE: return "out of range";
    case HY_E_STATE: return "bad state";
    case HY_E_CANCELLED: return "cancelled";
    case HY_E_INTERNAL: return "internal";
    default: return "unknown";
    }
}

int hy_err_set(hy_err *e, int code, const char *fmt, ...) {
    if (e) {
        e->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

int hy_err_wrap(hy_err *e, const char *fmt, ...) {
    if (!e) return HY_E_INTERNAL;
    char prefix[512], old[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    /* Truncation of very long chains is fine: the innermost detail comes last. */
    size_t n = strlen(prefix);
    if (n > sizeof e->msg - 3) n = sizeof e->msg - 3;
    memcpy(e->msg, prefix, n);
    memcpy(e->msg + n, ": ", 2);
    size_t room = sizeof e->msg - n - 3;
    size_t m = strnlen(old, room);
    memcpy(e->msg + n + 2, old, m);
    e->msg[n + 2 + m] = 0;
    return e->code;
}

void hy_err_clear(hy_err *e) {
    if (e) {
        e->code = 0;
        e->msg[0] = 0;
    }
}

void hy_assert_fail(const char *expr, const char *file, int line) {
    fprintf(stderr, "hyla: assertion failed: %s (%s:%d)\n", expr, file, line);
    abort();
}
