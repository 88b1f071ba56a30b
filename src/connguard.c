/* SPDX-License-Identifier: Apache-2.0 */
/*
 * connguard.c — the connection guard of the HTTP servers (see
 * connguard.h for the rules and why shutdown(2) on a descriptor is safe).
 *
 * DESIGN
 *
 * Every connection libmicrohttpd reported STARTED and not yet CLOSED is an
 * entry on one list, in the order of since_ms: an entry joins at the tail
 * when it opens and moves to the tail when it waits again after an answer.
 * An entry is WAITING (its request is not all in: since_ms says since
 * when), BUSY (being answered) or SHUT (the guard shut its socket down;
 * libmicrohttpd has yet to see the end of file and report CLOSED).  SHUT
 * entries count for nothing: not towards the limits, never a victim,
 * never shut again.
 *
 * Making room for a new connection counts the client's live entries (one
 * walk; the list is as long as the server's connection limit, and a walk
 * costs less than the accept(2) and the thread or poll registration each
 * connection costs anyway), then takes the first WAITING entry from the
 * head, the client's or any, that has not SENT MUCH, or, if every one has,
 * the first.  Sent much: the kernel counted PROGRESS_BYTES or more
 * received on the connection (TCP_INFO's tcpi_bytes_received, whether the
 * server has read them or not), or its receive queue holds bytes the
 * server has not read yet (FIONREAD; for sockets without TCP_INFO).  Why:
 * under a flood that reopens every closed connection at once, connections
 * are accepted faster than the server's threads get to read and parse
 * them, and a probe whose request came whole would otherwise be closed
 * between the read and the access handler's call, by the flood's next
 * few dozen connections.  A trickling or idle connection has sent next
 * to nothing when the deadline ends it.  A flood that sends more up
 * front only brings the choice back to "longest waiting", where a probe,
 * the newest, comes last.
 *
 * The listening sockets get TCP_DEFER_ACCEPT (sl_connguard_mhd_listen()):
 * the kernel hands a connection over only once its first bytes are in, so
 * a connection that sends nothing takes no slot and costs no thread until
 * the kernel gives up waiting (about the deadline), and a probe is
 * accepted with its request already there, never as an empty connection
 * the flood's next ones would push out before its bytes arrive.
 *
 * The reaper thread wakes at the next deadline due, and at least every
 * REAP_MAX_SLEEP_MS (a connection opened meanwhile is due a deadline
 * later, so it is closed at most that late), shuts down what is past
 * due, and sleeps again.  Nothing it does blocks: shutdown(2) on a TCP
 * socket returns at once.
 *
 * Logs: one line per REPORT_MS at most, with what the guard closed since
 * the last one, written after the lock is released (a log line may block
 * on a full stderr; the server's threads must not wait for it).
 */
#include "connguard.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

#define REAP_MAX_SLEEP_MS 100
#define REPORT_MS         10000
/* "GET / HTTP/1.1\r\n": a request line's worth. */
#define PROGRESS_BYTES 16

typedef enum { C_WAITING, C_BUSY, C_SHUT } conn_state_t;

struct sl_connguard_conn_s {
        sl_connguard_conn_t *prev, *next;
        int fd;
        uint8_t client[16]; /* IPv4 as ::ffff:a.b.c.d, IPv6 its /64 */
        conn_state_t state;
        int64_t since_ms; /* WAITING since */
};

/* What was closed since the last log line. */
typedef struct {
        uint64_t deadline, client_limit, limit, refused;
} tally_t;

struct sl_connguard_s {
        sl_connguard_conf_t conf;
        char name[32];
        sl_connguard_metrics_t m;

        pthread_mutex_t lock; /* everything below */
        pthread_cond_t cond;  /* wakes the reaper to stop */
        sl_connguard_conn_t *head, *tail;
        int live; /* entries not SHUT */
        tally_t tally;
        int64_t reported_ms;

        pthread_t reaper;
        int running;
        int stop;
};

static int64_t mono_ms(void) {
        return sl_mono_us() / 1000;
}

static void client_key(const struct sockaddr *sa, uint8_t key[16]) {
        memset(key, 0, 16);
        if (!sa)
                return;
        if (sa->sa_family == AF_INET) {
                const struct sockaddr_in *sin = (const void *)sa;
                key[10] = key[11] = 0xff;
                memcpy(key + 12, &sin->sin_addr, 4);
        } else if (sa->sa_family == AF_INET6) {
                const struct sockaddr_in6 *sin6 = (const void *)sa;
                const uint8_t *a = sin6->sin6_addr.s6_addr;
                /* A v4-mapped address is that IPv4 client; any other
                 * IPv6 client is its /64, which one host gets whole. */
                memcpy(key, a, IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr) ? 16 : 8);
        }
}

sl_connguard_t *sl_connguard_new(const sl_connguard_conf_t *conf,
                                 const sl_connguard_metrics_t *metrics) {
        sl_connguard_t *g = sl_calloc(1, sizeof(*g));
        pthread_condattr_t ca;

        sl_assert(conf->max_conns >= 1 && conf->per_client >= 1 &&
                  conf->deadline_ms >= 1);
        g->conf = *conf;
        snprintf(g->name, sizeof(g->name), "%s",
                 conf->name ? conf->name : "http");
        g->conf.name = g->name;
        if (g->conf.per_client > g->conf.max_conns)
                g->conf.per_client = g->conf.max_conns;
        if (metrics)
                g->m = *metrics;
        pthread_mutex_init(&g->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&g->cond, &ca);
        pthread_condattr_destroy(&ca);
        g->reported_ms = mono_ms();
        return g;
}

/* Shuts c's socket down (lock held): libmicrohttpd reads an end of file
 * and closes the connection; c stays listed until it reports CLOSED. */
static void conn_shut(sl_connguard_t *g, sl_connguard_conn_t *c,
                      uint64_t *tally, sl_counter_t *counter) {
        sl_assert(c->state != C_SHUT);
        /* ENOTCONN when the client is gone already: nothing to do. */
        (void)shutdown(c->fd, SHUT_RDWR);
        c->state = C_SHUT;
        g->live--;
        (*tally)++;
        sl_counter_inc(counter);
}

/* The line to log, if it is time for one (lock held); "" if not. */
static void report_take(sl_connguard_t *g, int64_t now_ms, char *line,
                        size_t size) {
        tally_t *t = &g->tally;
        line[0] = '\0';
        if (now_ms - g->reported_ms < REPORT_MS ||
            !(t->deadline | t->client_limit | t->limit | t->refused))
                return;
        snprintf(line, size,
                 "%s: closed %" PRIu64 " connections in the last %" PRId64
                 " s to keep the server answering: %" PRIu64
                 " past the request deadline (%" PRId64 " ms), %" PRIu64
                 " to admit a newer one of the same client (%d at most "
                 "each), %" PRIu64 " to admit a newer one at the limit (%d), "
                 "%" PRIu64 " new ones refused (every other busy)",
                 g->name, t->deadline + t->client_limit + t->limit + t->refused,
                 (now_ms - g->reported_ms + 500) / 1000, t->deadline,
                 g->conf.deadline_ms, t->client_limit, g->conf.per_client,
                 t->limit, g->conf.max_conns, t->refused);
        memset(t, 0, sizeof(*t));
        g->reported_ms = now_ms;
}

static void report_log(const char *line) {
        if (*line)
                sl_log(LOG_WARNING, "HTTP", "%s", line);
}

static void list_append(sl_connguard_t *g, sl_connguard_conn_t *c) {
        c->next = NULL;
        c->prev = g->tail;
        if (g->tail)
                g->tail->next = c;
        else
                g->head = c;
        g->tail = c;
}

static void list_remove(sl_connguard_t *g, sl_connguard_conn_t *c) {
        if (c->prev)
                c->prev->next = c->next;
        else
                g->head = c->next;
        if (c->next)
                c->next->prev = c->prev;
        else
                g->tail = c->prev;
        c->prev = c->next = NULL;
}

/* 1 when the client of fd has sent much (see DESIGN): PROGRESS_BYTES
 * received in all, or bytes the server has not read yet. */
static int sent_much(int fd) {
        struct tcp_info ti;
        socklen_t len = sizeof(ti);
        int n = 0;

        memset(&ti, 0, sizeof(ti));
        if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
            len >= offsetof(struct tcp_info, tcpi_bytes_received) +
                       sizeof(ti.tcpi_bytes_received) &&
            ti.tcpi_bytes_received >= PROGRESS_BYTES)
                return 1;
        return ioctl(fd, FIONREAD, &n) == 0 && n > 0;
}

/* The entry to close to make room (lock held): the WAITING one that has
 * waited longest (of client, when not NULL) and has not sent much, else
 * the one that has waited longest; NULL when none is WAITING.  The list
 * is in since_ms order, so the first found has waited longest. */
static sl_connguard_conn_t *victim(sl_connguard_t *g, const uint8_t *client,
                                   const sl_connguard_conn_t *except) {
        sl_connguard_conn_t *first = NULL;
        for (sl_connguard_conn_t *e = g->head; e; e = e->next) {
                if (e == except || e->state != C_WAITING ||
                    (client && memcmp(e->client, client, sizeof(e->client))))
                        continue;
                if (!sent_much(e->fd))
                        return e;
                if (!first)
                        first = e;
        }
        return first;
}

sl_connguard_conn_t *sl_connguard_open(sl_connguard_t *g, int fd,
                                       const struct sockaddr *addr,
                                       int64_t now_ms) {
        sl_connguard_conn_t *c = sl_calloc(1, sizeof(*c)), *v;
        int mine = 0;
        char line[512];

        c->fd = fd;
        client_key(addr, c->client);
        c->state = C_WAITING;
        c->since_ms = now_ms;

        pthread_mutex_lock(&g->lock);
        for (sl_connguard_conn_t *e = g->head; e; e = e->next)
                mine += e->state != C_SHUT &&
                        !memcmp(e->client, c->client, sizeof(c->client));
        list_append(g, c);
        g->live++;
        if (mine >= g->conf.per_client) {
                if ((v = victim(g, c->client, c)))
                        conn_shut(g, v, &g->tally.client_limit,
                                  g->m.client_limit);
                else
                        conn_shut(g, c, &g->tally.refused, g->m.refused);
        } else if (g->live > g->conf.max_conns) {
                if ((v = victim(g, NULL, c)))
                        conn_shut(g, v, &g->tally.limit, g->m.limit);
                else
                        conn_shut(g, c, &g->tally.refused, g->m.refused);
        }
        sl_gauge_set(g->m.open, g->live);
        report_take(g, now_ms, line, sizeof(line));
        pthread_mutex_unlock(&g->lock);
        report_log(line);
        return c;
}

void sl_connguard_busy(sl_connguard_t *g, sl_connguard_conn_t *c) {
        if (!c)
                return;
        pthread_mutex_lock(&g->lock);
        if (c->state == C_WAITING)
                c->state = C_BUSY;
        pthread_mutex_unlock(&g->lock);
}

void sl_connguard_idle(sl_connguard_t *g, sl_connguard_conn_t *c,
                       int64_t now_ms) {
        if (!c)
                return;
        pthread_mutex_lock(&g->lock);
        if (c->state != C_SHUT) {
                c->state = C_WAITING;
                c->since_ms = now_ms;
                /* The list stays in since_ms order. */
                list_remove(g, c);
                list_append(g, c);
        }
        pthread_mutex_unlock(&g->lock);
}

void sl_connguard_close(sl_connguard_t *g, sl_connguard_conn_t *c) {
        if (!c)
                return;
        pthread_mutex_lock(&g->lock);
        list_remove(g, c);
        if (c->state != C_SHUT)
                g->live--;
        sl_gauge_set(g->m.open, g->live);
        pthread_mutex_unlock(&g->lock);
        free(c);
}

/* sl_connguard_reap() with the lock held. */
static int64_t reap_locked(sl_connguard_t *g, int64_t now_ms) {
        int64_t next = INT64_MAX;
        for (sl_connguard_conn_t *e = g->head; e; e = e->next) {
                int64_t due;
                if (e->state != C_WAITING)
                        continue;
                due = e->since_ms + g->conf.deadline_ms;
                if (due <= now_ms)
                        conn_shut(g, e, &g->tally.deadline, g->m.deadline);
                else if (due < next)
                        next = due;
        }
        sl_gauge_set(g->m.open, g->live);
        return next;
}

int64_t sl_connguard_reap(sl_connguard_t *g, int64_t now_ms) {
        int64_t next;
        char line[512];
        pthread_mutex_lock(&g->lock);
        next = reap_locked(g, now_ms);
        report_take(g, now_ms, line, sizeof(line));
        pthread_mutex_unlock(&g->lock);
        report_log(line);
        return next;
}

int sl_connguard_count(sl_connguard_t *g) {
        int n;
        pthread_mutex_lock(&g->lock);
        n = g->live;
        pthread_mutex_unlock(&g->lock);
        return n;
}

static void *reaper_main(void *arg) {
        sl_connguard_t *g = arg;
        char line[512];

        pthread_mutex_lock(&g->lock);
        while (!g->stop) {
                int64_t now = mono_ms(), next = reap_locked(g, now);
                struct timespec ts;

                report_take(g, now, line, sizeof(line));
                if (*line) {
                        pthread_mutex_unlock(&g->lock);
                        report_log(line);
                        pthread_mutex_lock(&g->lock);
                        continue;
                }
                if (next > now + REAP_MAX_SLEEP_MS)
                        next = now + REAP_MAX_SLEEP_MS;
                ts.tv_sec = next / 1000;
                ts.tv_nsec = (next % 1000) * 1000000;
                /* mono_ms() is CLOCK_MONOTONIC, the condition's clock. */
                pthread_cond_timedwait(&g->cond, &g->lock, &ts);
        }
        pthread_mutex_unlock(&g->lock);
        return NULL;
}

int sl_connguard_start(sl_connguard_t *g) {
        sl_assert(!g->running);
        if (pthread_create(&g->reaper, NULL, reaper_main, g))
                return -1;
        g->running = 1;
        return 0;
}

void sl_connguard_destroy(sl_connguard_t *g) {
        if (!g)
                return;
        if (g->running) {
                pthread_mutex_lock(&g->lock);
                g->stop = 1;
                pthread_cond_signal(&g->cond);
                pthread_mutex_unlock(&g->lock);
                pthread_join(g->reaper, NULL);
        }
        while (g->head) {
                sl_connguard_conn_t *c = g->head;
                g->head = c->next;
                free(c);
        }
        pthread_cond_destroy(&g->cond);
        pthread_mutex_destroy(&g->lock);
        free(g);
}

/* ---- libmicrohttpd glue ---------------------------------------------- */

void sl_connguard_mhd_notify(void *cls, struct MHD_Connection *c,
                             void **socket_context,
                             enum MHD_ConnectionNotificationCode toe) {
        sl_connguard_t *g = cls;

        if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
                /* The descriptor is read before the next query: since
                 * 1.0 libmicrohttpd answers every query in one union of
                 * the connection's, so the address would overwrite it
                 * (a pointer's low bits taken for a descriptor). */
                const union MHD_ConnectionInfo *i = MHD_get_connection_info(
                    c, MHD_CONNECTION_INFO_CONNECTION_FD);
                int fd = i ? (int)i->connect_fd : -1;
                const union MHD_ConnectionInfo *addr = MHD_get_connection_info(
                    c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
                /* Without its descriptor a connection goes unguarded
                 * (libmicrohttpd 0.9.75 and 1.0 always have one). */
                const struct sockaddr *sa = addr ? addr->client_addr : NULL;
                *socket_context =
                    fd != -1 ? sl_connguard_open(g, fd, sa, mono_ms()) : NULL;
        } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
                sl_connguard_close(g, *socket_context);
                *socket_context = NULL;
        }
}

static sl_connguard_conn_t *mhd_conn(struct MHD_Connection *c) {
        const union MHD_ConnectionInfo *i =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        return i ? i->socket_context : NULL;
}

void sl_connguard_mhd_busy(sl_connguard_t *g, struct MHD_Connection *c) {
        sl_connguard_busy(g, mhd_conn(c));
}

void sl_connguard_mhd_idle(sl_connguard_t *g, struct MHD_Connection *c) {
        sl_connguard_idle(g, mhd_conn(c), mono_ms());
}

void sl_connguard_mhd_listen(sl_connguard_t *g, struct MHD_Daemon *d) {
        const union MHD_DaemonInfo *i =
            MHD_get_daemon_info(d, MHD_DAEMON_INFO_LISTEN_FD);
        int secs = (int)((g->conf.deadline_ms + 999) / 1000);

        /* Linux reads it for each connection that arrives, so setting it
         * on a socket that listens already is fine.  Without it (another
         * kernel) idle connections are accepted and the deadline ends
         * them: a warning, not an error. */
        if (!i || setsockopt(i->listen_fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs,
                             sizeof(secs)) == -1)
                sl_log(LOG_WARNING, "HTTP",
                       "%s: cannot defer accepting connections until they "
                       "send (TCP_DEFER_ACCEPT): %s",
                       g->name, i ? strerror(errno) : "no listening socket");
}

unsigned int sl_connguard_mhd_limit(const sl_connguard_t *g) {
        /* Twice the limit: the guard may shut down a whole server's worth
         * at once (a deadline), and each new connection past the limit
         * shuts one down before libmicrohttpd has cleaned the last up. */
        return 2 * (unsigned)g->conf.max_conns + 16;
}
