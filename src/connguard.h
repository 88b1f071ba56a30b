/* SPDX-License-Identifier: Apache-2.0 */
/*
 * connguard.h — what slow, idle or many clients may hold of an HTTP server
 * (the metrics address and the API, both libmicrohttpd).
 *
 * libmicrohttpd bounds a server's connections and closes a connection
 * that has been *inactive* for its timeout, but every byte a client sends
 * renews that timeout, and a connection refused at the limit waits in the
 * kernel's backlog.  So a few hundred clients sending one byte every few
 * seconds hold every slot for as long as they like, and the next client
 * (the kubelet's liveness probe) gets no answer.  The guard adds three
 * rules, enforced with shutdown(2) on the connection's socket:
 *
 *   DEADLINE   A connection is WAITING from the moment it opens, and again
 *              from the moment an answer on it was sent (keep-alive), until
 *              its request's head and body are all in; then it is BUSY
 *              until the answer is sent.  A connection WAITING for longer
 *              than the deadline is closed, however steadily it trickles.
 *              A TLS handshake is part of the wait.
 *
 *   PER CLIENT A client (an IPv4 address, or an IPv6 /64) holds at most
 *              per_client connections.  A new one past that closes the
 *              client's connection that has been WAITING the longest; if
 *              all of them are BUSY the new one is closed instead.
 *
 *   CAPACITY   The server holds at most max_conns connections.  A new one
 *              past that closes the connection, of any client, that has
 *              been WAITING the longest; if all are BUSY, the new one is
 *              closed.
 *
 * Making room passes over a WAITING connection whose client has sent a
 * request line's worth of bytes (counted by the kernel, read by the server
 * or not), if another has not: a request sent whole at once is about to
 * be answered, a trickling or idle connection has sent next to nothing.
 * And the servers' listening sockets defer accepting a connection until
 * its first bytes are in (TCP_DEFER_ACCEPT), so idle connections take no
 * slot at all until the kernel stops waiting for them.
 *
 * So a new connection is never turned away while an incomplete one can
 * make room: a client that sends its request at once (a probe, a scrape,
 * an API call) gets its answer under any flood of slow or idle clients,
 * even one from its own address, because the connections older than it
 * go first.  A flood costs the flooders their own connections, and CPU.
 *
 * Identity and safety.  A connection is known by its socket's descriptor,
 * which the kernel reuses as soon as libmicrohttpd closes it.  Entries are
 * created by libmicrohttpd's NOTIFY_CONNECTION STARTED callback and
 * removed by its CLOSED callback, and shutdown(2) is only ever called with
 * the guard's lock held on an entry still present.  libmicrohttpd 0.9.75
 * calls CLOSED before it closes the descriptor (MHD_cleanup_connections(),
 * and the failure path of new_connection_process_()), and CLOSED takes
 * the same lock, so a descriptor is never shut down after its close, and
 * never one that now belongs to somebody else.  A connection shut down
 * wakes libmicrohttpd with an end of file, and it closes it as a client
 * that went away.  (libmicrohttpd shuts down its own sockets from other
 * threads in the same way when it stops.)
 *
 * libmicrohttpd must be told a connection limit above max_conns
 * (sl_connguard_mhd_limit()): it refuses connections past its own limit
 * before the guard sees them, and the connections the guard closed count
 * against it until libmicrohttpd has cleaned them up.
 *
 * Threads: the guard's functions may be called from any thread (the
 * server's threads, its reaper thread, tests); one mutex guards the
 * entries.  Finding a victim walks the connections: O(max_conns) per new
 * connection.
 */
#ifndef SL_CONNGUARD_H
#define SL_CONNGUARD_H

#include <microhttpd.h>
#include <stdint.h>
#include <sys/socket.h>

#include "metrics.h"

typedef struct sl_connguard_s sl_connguard_t;
typedef struct sl_connguard_conn_s sl_connguard_conn_t;

/* A guard's bounds. */
typedef struct sl_connguard_conf_s {
        const char *name;    /* for logs: "metrics", "api" */
        int max_conns;       /* >= 1 */
        int per_client;      /* 1 .. max_conns */
        int64_t deadline_ms; /* >= 1 */
} sl_connguard_conf_t;

/* What the guard counts, handles of the owner's metric families (any may
 * be NULL).  Registered by the owner with sl_metrics_register() from a
 * table of its own names. */
typedef struct sl_connguard_metrics_s {
        sl_counter_t *deadline;     /* WAITING past the deadline */
        sl_counter_t *client_limit; /* closed to admit a newer one, same
                                       client */
        sl_counter_t *limit;        /* closed to admit a newer one */
        sl_counter_t *refused;      /* new ones closed: all others BUSY */
        sl_gauge_t *open;           /* connections held now */
} sl_connguard_metrics_t;

/*
 * A guard with conf's bounds (copied, name too), counting into *metrics
 * (copied; NULL: nothing counted).  Starts no thread: see
 * sl_connguard_start().  Free with sl_connguard_destroy().
 */
sl_connguard_t *sl_connguard_new(const sl_connguard_conf_t *conf,
                                 const sl_connguard_metrics_t *metrics);

/* Starts the reaper thread, which closes connections past the deadline
 * (within about a tenth of it, at most 100 ms late).  Returns 0, or -1
 * when the thread cannot be started. */
int sl_connguard_start(sl_connguard_t *g);

/* Stops the reaper and frees g and every entry left.  Call after the
 * server has stopped (every CLOSED was called).  NULL is a no-op. */
void sl_connguard_destroy(sl_connguard_t *g);

/*
 * A connection opened on socket fd from addr (may be NULL: one anonymous
 * client) at now_ms (monotonic).  Makes room by the rules above, which may
 * shut down an older connection or this one.  Returns its entry, always
 * (also when it was closed at once), to give to the functions below until
 * sl_connguard_close().
 */
sl_connguard_conn_t *sl_connguard_open(sl_connguard_t *g, int fd,
                                       const struct sockaddr *addr,
                                       int64_t now_ms);

/* The request on c is all in: BUSY, out of the deadline's reach and never
 * closed to make room.  NULL c is a no-op. */
void sl_connguard_busy(sl_connguard_t *g, sl_connguard_conn_t *c);

/* The answer on c was sent (the connection may carry another request):
 * WAITING again from now_ms.  NULL c is a no-op. */
void sl_connguard_idle(sl_connguard_t *g, sl_connguard_conn_t *c,
                       int64_t now_ms);

/* The server closed c's socket, or is about to: c is forgotten and its
 * descriptor never touched again.  NULL c is a no-op. */
void sl_connguard_close(sl_connguard_t *g, sl_connguard_conn_t *c);

/* Closes every connection WAITING since before now_ms - deadline (the
 * reaper calls it).  Returns the monotonic time at which the next one
 * would be due, or INT64_MAX when none is WAITING. */
int64_t sl_connguard_reap(sl_connguard_t *g, int64_t now_ms);

/* Connections held (not yet closed by the guard or the server). */
int sl_connguard_count(sl_connguard_t *g);

/* ---- libmicrohttpd glue ---------------------------------------------- */

/* MHD_OPTION_NOTIFY_CONNECTION's callback, with g as its closure: opens
 * and closes the entries, kept in the connection's socket context. */
void sl_connguard_mhd_notify(void *g, struct MHD_Connection *c,
                             void **socket_context,
                             enum MHD_ConnectionNotificationCode toe);

/* sl_connguard_busy() / sl_connguard_idle() on the entry of MHD
 * connection c (from the access handler / MHD_OPTION_NOTIFY_COMPLETED). */
void sl_connguard_mhd_busy(sl_connguard_t *g, struct MHD_Connection *c);
void sl_connguard_mhd_idle(sl_connguard_t *g, struct MHD_Connection *c);

/* Sets TCP_DEFER_ACCEPT, about the deadline, on d's listening socket
 * (logs a warning when it cannot). */
void sl_connguard_mhd_listen(sl_connguard_t *g, struct MHD_Daemon *d);

/* The MHD_OPTION_CONNECTION_LIMIT to give libmicrohttpd: above max_conns
 * by room for connections closed and not yet cleaned up. */
unsigned int sl_connguard_mhd_limit(const sl_connguard_t *g);

#endif
