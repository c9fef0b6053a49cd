/* stderr logger; see log.h for why the level is process-wide. */
#include "base/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

static atomic_int g_level = HY_LOG_WARN;

void hy_log_set_level(int level) { atomic_store(&g_level, level); }
int hy_log_get_level(void) { return atomic_load(&g_level); }

void hy_log(int level, const char *fmt, ...) {
    if (level < atomic_load(&g_level)) return;
    static const char *names[] = {"debug", "info", "warn", "error"};
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "hyla %s: %s\n", names[level < 0 ? 0 : level > 3 ? 3 : level], buf);
}
