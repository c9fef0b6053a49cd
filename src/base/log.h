/*
 * Logging to stderr with a level threshold. The threshold is process-wide but
 * set once at start-up by the CLI (HYLA_LOG=debug|info|warn|error); reading it
 * is the only shared state, and it is never written after start-up.
 */
#ifndef HY_BASE_LOG_H
#define HY_BASE_LOG_H

enum hy_log_level { HY_LOG_DEBUG = 0, HY_LOG_INFO = 1, HY_LOG_WARN = 2, HY_LOG_ERROR = 3 };

void hy_log_set_level(int level);
int hy_log_get_level(void);
void hy_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define HY_LOGD(...) hy_log(HY_LOG_DEBUG, __VA_ARGS__)
#define HY_LOGI(...) hy_log(HY_LOG_INFO, __VA_ARGS__)
#define HY_LOGW(...) hy_log(HY_LOG_WARN, __VA_ARGS__)
#define HY_LOGE(...) hy_log(HY_LOG_ERROR, __VA_ARGS__)

#endif
