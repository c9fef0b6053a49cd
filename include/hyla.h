/*
 * hyla public API: the only header a user of the library includes.
 * Status codes are shared by every module; internal headers live under src/.
 * Threading: a hy_engine is driven by one engine thread; other threads talk to
 * it only through the request API (added with the server).
 */
#ifndef HYLA_H
#define HYLA_H

#ifdef __cplusplus
extern "C" {
#endif

#define HYLA_VERSION "0.1.0"

/* Every library function returns 0 or one of these (negative). */
enum hy_status {
    HY_OK = 0,
    HY_E_INVALID = -1,     /* bad argument or malformed input (file, JSON, request) */
    HY_E_IO = -2,          /* open/read/mmap failed */
    HY_E_NOMEM = -3,       /* allocation failed or a budget was exceeded */
    HY_E_UNSUPPORTED = -4, /* valid input we do not handle (model type, dtype...) */
    HY_E_NOT_FOUND = -5,   /* missing file, tensor, field, token */
    HY_E_RANGE = -6,       /* value out of bounds (sizes, offsets, positions) */
    HY_E_STATE = -7,       /* call not allowed in this state */
    HY_E_CANCELLED = -8,
    HY_E_INTERNAL = -9,
};

/* Human-readable name of a status code ("invalid", "io", ...). */
const char *hy_status_str(int status);

#ifdef __cplusplus
}
#endif
#endif
