/*
 * log.h — one line per event: time, level, facility, message.
 *
 * librdkafka's own log lines are routed here too (sl_kafka_log_cb in kafka.h),
 * so an operator reads one stream.  Levels are syslog's.  Never log secrets.
 */
#ifndef SL_LOG_H
#define SL_LOG_H

#include <syslog.h>

/* Lines above this level are dropped.  Default LOG_INFO. */
void sl_log_set_level(int level);
int sl_log_get_level(void);

void sl_log(int level, const char *fac, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Level name ("info", "warning", ...) to syslog level; -1 if unknown. */
int sl_log_level_parse(const char *name);

#endif
