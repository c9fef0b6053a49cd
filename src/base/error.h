/*
 * Error reporting: functions return an HY_E_* code and record a one-line
 * message in the hy_err the caller passed (which may be NULL). The message
 * names what was wrong: which file, which field, what was expected.
 * Thread-safety: an hy_err belongs to one caller; no globals.
 */
#ifndef HY_BASE_ERROR_H
#define HY_BASE_ERROR_H

#include "hyla.h"
#include <stdarg.h>

typedef struct hy_err {
    int code;
    char msg[1024];
} hy_err;

/* Records code and a printf-style message in e (if non-NULL); returns code. */
int hy_err_set(hy_err *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prepends "prefix: " to the existing message (adds context on the way up). */
int hy_err_wrap(hy_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void hy_err_clear(hy_err *e);

/* Always-on invariant check: aborts with file:line. For bugs, never for bad input. */
#define HY_ASSERT(cond)                                                                 \
    do {                                                                                \
        if (!(cond)) hy_assert_fail(#cond, __FILE__, __LINE__);                         \
    } while (0)
_Noreturn void hy_assert_fail(const char *expr, const char *file, int line);

#endif
