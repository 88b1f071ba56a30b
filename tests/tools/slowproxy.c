/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slowproxy.c — a TCP proxy that holds every byte back for a set time, for
 * the network-fault tests (this kernel has no netem qdisc to do it).
 *
 *   slowproxy LISTEN_HOST:PORT UPSTREAM_HOST:PORT DELAY_FILE
 *
 * Each connection accepted on LISTEN (an IPv4 literal; port 0 picks a free
 * one) gets a connection of its own to UPSTREAM: a pair.  Bytes flow both
 * ways, and every chunk read in either direction is written to the other
 * side no earlier than delay_ms after it was read.  A round trip through
 * the proxy therefore takes at least twice the delay.  Nothing else is
 * limited: chunks that are due go out at once, many to a write.
 *
 * The delay is the decimal number of milliseconds in DELAY_FILE (missing
 * or empty: 0), read again every 100 ms, so that a test says
 * `echo 200 > FILE` and later `echo 0 > FILE`.  A chunk's due time is
 * fixed when it is read (its read time plus the delay then); the chunks of
 * one direction leave in the order they came, so a chunk read after the
 * delay was lowered waits for those before it.  A file that holds anything
 * else keeps the delay it had, with a warning.  A read may fall between
 * the truncation and the write of `echo N > FILE` and see 0 for one
 * period; a writer that cares renames a finished file over it.
 *
 * DESIGN
 *
 * A pair is two TCP handles (down: the accepted client, up: the upstream)
 * and two directions, down->up and up->down.  A direction is a FIFO of
 * chunks (due time, bytes), a timer armed for the due time of its head, at
 * most one write in flight (all the due chunks at its head, up to
 * WRITE_BUFS) and one shutdown.  Its states:
 *
 *   open     its source is read; chunks are queued and written when due.
 *   ended    its source gave EOF or an error: nothing more is read from
 *            it, but what was read is still written on schedule; when the
 *            queue is empty its destination is shut down for writing.
 *   done     the shutdown completed, or the destination is broken (a
 *            write or shutdown failed): the queue is dropped.
 *
 * A broken socket ends both directions that touch it: the one writing to
 * it is done, the one reading from it is ended, and that one still
 * delivers what it had read to the other side.  So a client that gives up
 * on a request and closes its connection (its kernel answers the next
 * response with a reset) still has the requests it sent reach the
 * upstream, late: "a delayed request arrives after its retry on a new
 * connection".  The pair is closed when both directions are done; if the
 * upstream connect fails, at once (the client sees its connection close).
 *
 * The client is read from the moment it is accepted, before the upstream
 * connect completes, so that read times are true; writes to the upstream
 * wait for the connect.
 *
 * Bounds: at most MAX_PAIRS pairs (a connection beyond them is accepted
 * and closed at once), at most MAX_QUEUED bytes (data and chunk headers)
 * queued per direction: above it the source is no longer read, below it
 * again reading resumes.  The soft limit on open files is raised to what
 * MAX_PAIRS needs, up to the hard limit.
 *
 * Logs to stderr: "slowproxy: LISTEN -> UPSTREAM" once listening (LISTEN
 * with the port actually bound), a line for each delay change, each
 * connection opened and closed, each refusal.  Exits 0 on SIGTERM or
 * SIGINT (connections are closed, queued bytes dropped), 1 when it cannot
 * listen, 2 on bad usage.  Single-threaded: everything runs on the libuv
 * loop.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <uv.h>

#define MAX_PAIRS     512
#define MAX_QUEUED    ((size_t)64 << 20)
#define DELAY_POLL_MS 100
#define MAX_DELAY_MS  (24L * 3600 * 1000)
#define WRITE_BUFS    64
#define READ_BUF_SIZE 65536

typedef struct chunk {
        struct chunk *next;
        uint64_t due_ns; /* uv_hrtime() from which it may be written */
        size_t len;
        char data[];
} chunk_t;

typedef struct proxy proxy_t;
typedef struct pair pair_t;

/* One direction of a pair: bytes read from src, written to dst. */
typedef struct dir {
        pair_t *pair;
        uv_tcp_t *src, *dst;
        uv_timer_t timer; /* armed for the head's due time */
        chunk_t *head, *tail;
        size_t queued;  /* bytes held: data and chunk headers */
        int inflight;   /* chunks at the head in the write in flight */
        uint64_t total; /* bytes read from src, for the close line */
        int reading;    /* uv_read_start()ed on src */
        int ended;      /* src is read no more */
        int shutting;   /* uv_shutdown(dst) requested */
        int done;       /* dst shut down or broken */
        uv_write_t wreq;
        uv_shutdown_t sreq;
} dir_t;

struct pair {
        proxy_t *px;
        pair_t *prev, *next;
        unsigned long id;
        uv_tcp_t down, up;
        uv_connect_t creq;
        dir_t d[2]; /* [0] down->up, [1] up->down */
        int connected;
        int closing;
        int open_handles;  /* of down, up and the two timers */
        const char *error; /* the first failure, for the close line */
};

struct proxy {
        uv_loop_t *loop;
        uv_tcp_t listener;
        uv_timer_t delay_timer;
        uv_signal_t sigterm, sigint;
        struct sockaddr_in upstream;
        const char *upstream_str;
        const char *delay_file;
        long delay_ms;
        int delay_warned; /* the file's trouble was reported */
        pair_t *pairs;
        int npairs;
        unsigned long next_id;
        char rbuf[READ_BUF_SIZE]; /* every read lands here, then is copied */
};

static void pair_close(pair_t *p);
static void dir_pump(dir_t *d);

/* For the calls that cannot fail on Unix with the arguments given. */
static void check(int r, const char *what) {
        if (r < 0) {
                fprintf(stderr, "slowproxy: %s: %s\n", what, uv_strerror(r));
                exit(1);
        }
}

/* Parses "A.B.C.D:PORT"; 0 or -1. */
static int parse_addr(const char *s, struct sockaddr_in *sa) {
        const char *colon = strrchr(s, ':');
        char host[64], *end;
        long port;

        if (!colon || colon == s || (size_t)(colon - s) >= sizeof(host))
                return -1;
        memcpy(host, s, (size_t)(colon - s));
        host[colon - s] = '\0';
        errno = 0;
        port = strtol(colon + 1, &end, 10);
        if (end == colon + 1 || *end || errno || port < 0 || port > 65535)
                return -1;
        return uv_ip4_addr(host, (int)port, sa) == 0 ? 0 : -1;
}

/* Reads DELAY_FILE into px->delay_ms; logs a change. */
static void delay_reload(proxy_t *px) {
        char buf[64], *s, *end;
        size_t n;
        long ms;
        FILE *fp;

        if (!(fp = fopen(px->delay_file, "r"))) {
                if (errno != ENOENT) {
                        if (!px->delay_warned)
                                fprintf(stderr,
                                        "slowproxy: %s: %s; keeping %ld ms\n",
                                        px->delay_file, strerror(errno),
                                        px->delay_ms);
                        px->delay_warned = 1;
                        return;
                }
                buf[0] = '\0';
        } else {
                n = fread(buf, 1, sizeof(buf) - 1, fp);
                fclose(fp);
                buf[n] = '\0';
        }
        for (s = buf; *s == ' ' || *s == '\t' || *s == '\n' || *s == '\r';)
                s++;
        if (!*s) {
                ms = 0;
        } else {
                errno = 0;
                ms = strtol(s, &end, 10);
                while (*end == ' ' || *end == '\t' || *end == '\n' ||
                       *end == '\r')
                        end++;
                if (end == s || *end || errno || ms < 0 || ms > MAX_DELAY_MS) {
                        if (!px->delay_warned)
                                fprintf(stderr,
                                        "slowproxy: %s: not a delay in ms "
                                        "(0..%ld); keeping %ld ms\n",
                                        px->delay_file, MAX_DELAY_MS,
                                        px->delay_ms);
                        px->delay_warned = 1;
                        return;
                }
        }
        px->delay_warned = 0;
        if (ms != px->delay_ms) {
                fprintf(stderr, "slowproxy: delay %ld ms\n", ms);
                px->delay_ms = ms;
        }
}

static void on_delay_timer(uv_timer_t *t) {
        delay_reload(t->data);
}

/* The direction that writes to, or reads from, socket s of pair p. */
static dir_t *dir_writing_to(pair_t *p, uv_tcp_t *s) {
        return p->d[0].dst == s ? &p->d[0] : &p->d[1];
}

static dir_t *dir_reading_from(pair_t *p, uv_tcp_t *s) {
        return p->d[0].src == s ? &p->d[0] : &p->d[1];
}

/* Frees the chunks at the head that the last write sent. */
static void dir_free_written(dir_t *d) {
        chunk_t *c;

        for (; d->inflight > 0; d->inflight--) {
                c = d->head;
                d->head = c->next;
                d->queued -= sizeof(*c) + c->len;
                free(c);
        }
        if (!d->head)
                d->tail = NULL;
}

/* Frees the chunks no write holds. */
static void dir_drop_unsent(dir_t *d) {
        chunk_t *keep = NULL, *c, *next;
        int i;

        c = d->head;
        for (i = 0; i < d->inflight; i++) {
                keep = c;
                c = c->next;
        }
        for (; c; c = next) {
                next = c->next;
                d->queued -= sizeof(*c) + c->len;
                free(c);
        }
        if (keep)
                keep->next = NULL;
        else
                d->head = NULL;
        d->tail = keep;
}

static void pair_maybe_close(pair_t *p) {
        if (p->d[0].done && p->d[1].done)
                pair_close(p);
}

/* Source of d read no more (EOF, error, or nowhere left to write). */
static void dir_end(dir_t *d) {
        if (d->ended)
                return;
        d->ended = 1;
        if (d->reading) {
                uv_read_stop((uv_stream_t *)d->src);
                d->reading = 0;
        }
        dir_pump(d);
}

/* Destination of d is gone: what d holds can go nowhere. */
static void dir_finish(dir_t *d) {
        d->done = 1;
        uv_timer_stop(&d->timer);
        dir_drop_unsent(d);
        if (!d->ended) {
                d->ended = 1;
                if (d->reading) {
                        uv_read_stop((uv_stream_t *)d->src);
                        d->reading = 0;
                }
        }
}

/* Socket s of pair p failed with err: the direction writing to it is done,
 * the one reading from it ended (it still delivers what it read). */
static void peer_broken(pair_t *p, uv_tcp_t *s, int err) {
        if (!p->error)
                p->error = uv_strerror(err);
        dir_finish(dir_writing_to(p, s));
        dir_end(dir_reading_from(p, s));
        pair_maybe_close(p);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
        dir_t *d = h->data;

        (void)suggested;
        *buf = uv_buf_init(d->pair->px->rbuf, sizeof(d->pair->px->rbuf));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
        dir_t *d = s->data;
        pair_t *p = d->pair;
        chunk_t *c;

        if (nread == 0 || p->closing)
                return;
        if (nread < 0) {
                if (nread == UV_EOF) {
                        dir_end(d);
                        pair_maybe_close(p);
                } else {
                        peer_broken(p, d->src, (int)nread);
                }
                return;
        }
        if (d->done)
                return;
        if (!(c = malloc(sizeof(*c) + (size_t)nread))) {
                p->error = "out of memory";
                pair_close(p);
                return;
        }
        c->next = NULL;
        c->due_ns = uv_hrtime() + (uint64_t)p->px->delay_ms * 1000000;
        c->len = (size_t)nread;
        memcpy(c->data, buf->base, c->len);
        if (d->tail)
                d->tail->next = c;
        else
                d->head = c;
        d->tail = c;
        d->queued += sizeof(*c) + c->len;
        d->total += c->len;
        if (d->queued >= MAX_QUEUED) {
                uv_read_stop(s);
                d->reading = 0;
        }
        /* Otherwise the timer or the write in flight takes care of it. */
        if (c == d->head)
                dir_pump(d);
}

/* Reads the source (again) while the queue is below its bound. */
static void dir_resume(dir_t *d) {
        int r;

        if (d->reading || d->ended || d->queued >= MAX_QUEUED ||
            !d->pair->connected)
                return;
        if ((r = uv_read_start((uv_stream_t *)d->src, on_alloc, on_read)) < 0)
                peer_broken(d->pair, d->src, r);
        else
                d->reading = 1;
}

static void on_write(uv_write_t *req, int status) {
        dir_t *d = req->data;
        pair_t *p = d->pair;

        dir_free_written(d);
        if (p->closing)
                return;
        if (status < 0) {
                peer_broken(p, d->dst, status);
                return;
        }
        dir_resume(d);
        dir_pump(d);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
        dir_t *d = req->data;
        pair_t *p = d->pair;

        if (p->closing)
                return;
        if (status < 0) {
                peer_broken(p, d->dst, status);
                return;
        }
        d->done = 1;
        pair_maybe_close(p);
}

static void on_dir_timer(uv_timer_t *t) {
        dir_pump(t->data);
}

/* Writes the due chunks at the head, or arms the timer for the head, or
 * shuts the destination down once the source has ended and all is sent. */
static void dir_pump(dir_t *d) {
        pair_t *p = d->pair;
        uv_buf_t bufs[WRITE_BUFS];
        uint64_t now;
        chunk_t *c;
        int n = 0, r;

        if (p->closing || d->done || !p->connected || d->inflight)
                return;
        now = uv_hrtime();
        for (c = d->head; c && c->due_ns <= now && n < WRITE_BUFS; c = c->next)
                bufs[n++] = uv_buf_init(c->data, (unsigned int)c->len);
        if (n > 0) {
                r = uv_write(&d->wreq, (uv_stream_t *)d->dst, bufs,
                             (unsigned int)n, on_write);
                if (r < 0)
                        peer_broken(p, d->dst, r);
                else
                        d->inflight = n;
                return;
        }
        if (d->head) {
                /* Rounded up: uv_now() lags uv_hrtime(), and a timer that
                 * fires early only arms itself again. */
                uv_timer_start(&d->timer, on_dir_timer,
                               (d->head->due_ns - now + 999999) / 1000000, 0);
                return;
        }
        if (d->ended && !d->shutting) {
                d->shutting = 1;
                r = uv_shutdown(&d->sreq, (uv_stream_t *)d->dst, on_shutdown);
                if (r < 0)
                        peer_broken(p, d->dst, r);
        }
}

static void on_connect(uv_connect_t *req, int status) {
        pair_t *p = req->data;

        if (p->closing)
                return;
        if (status < 0) {
                fprintf(stderr, "slowproxy: conn %lu: upstream %s: %s\n", p->id,
                        p->px->upstream_str, uv_strerror(status));
                p->error = "no upstream";
                pair_close(p);
                return;
        }
        p->connected = 1;
        uv_tcp_nodelay(&p->up, 1);
        dir_resume(&p->d[1]);
        dir_pump(&p->d[0]);
}

static void on_pair_handle_closed(uv_handle_t *h) {
        dir_t *d = h->data;
        pair_t *p = d->pair;
        int i;

        if (--p->open_handles > 0)
                return;
        for (i = 0; i < 2; i++) {
                p->d[i].inflight = 0;
                dir_drop_unsent(&p->d[i]);
        }
        free(p);
}

static void pair_close(pair_t *p) {
        proxy_t *px = p->px;

        if (p->closing)
                return;
        p->closing = 1;
        fprintf(stderr,
                "slowproxy: conn %lu closed (down->up %" PRIu64
                " B, up->down %" PRIu64 " B%s%s)\n",
                p->id, p->d[0].total, p->d[1].total, p->error ? ", " : "",
                p->error ? p->error : "");
        if (p->prev)
                p->prev->next = p->next;
        else
                px->pairs = p->next;
        if (p->next)
                p->next->prev = p->prev;
        px->npairs--;
        uv_close((uv_handle_t *)&p->down, on_pair_handle_closed);
        uv_close((uv_handle_t *)&p->up, on_pair_handle_closed);
        uv_close((uv_handle_t *)&p->d[0].timer, on_pair_handle_closed);
        uv_close((uv_handle_t *)&p->d[1].timer, on_pair_handle_closed);
}

static void dir_init(pair_t *p, dir_t *d, uv_tcp_t *src, uv_tcp_t *dst) {
        d->pair = p;
        d->src = src;
        d->dst = dst;
        src->data = d; /* reads from src are d's */
        check(uv_timer_init(p->px->loop, &d->timer), "uv_timer_init");
        d->timer.data = d;
        d->wreq.data = d;
        d->sreq.data = d;
}

static void on_free_handle(uv_handle_t *h) {
        free(h);
}

/* Past MAX_PAIRS: accept the connection and close it. */
static void refuse(proxy_t *px) {
        uv_tcp_t *t = malloc(sizeof(*t));

        if (!t)
                return;
        check(uv_tcp_init(px->loop, t), "uv_tcp_init");
        uv_accept((uv_stream_t *)&px->listener, (uv_stream_t *)t);
        uv_close((uv_handle_t *)t, on_free_handle);
        fprintf(stderr, "slowproxy: refused a connection: %d pairs open\n",
                px->npairs);
}

static void on_connection(uv_stream_t *server, int status) {
        proxy_t *px = server->data;
        struct sockaddr_storage ss;
        int sslen = sizeof(ss), r;
        char peer[64] = "?";
        pair_t *p;

        if (status < 0) {
                fprintf(stderr, "slowproxy: accept: %s\n", uv_strerror(status));
                return;
        }
        if (px->npairs >= MAX_PAIRS || !(p = calloc(1, sizeof(*p)))) {
                refuse(px);
                return;
        }
        p->px = px;
        p->id = ++px->next_id;
        check(uv_tcp_init(px->loop, &p->down), "uv_tcp_init");
        check(uv_tcp_init(px->loop, &p->up), "uv_tcp_init");
        dir_init(p, &p->d[0], &p->down, &p->up);
        dir_init(p, &p->d[1], &p->up, &p->down);
        p->open_handles = 4;
        p->creq.data = p;
        p->next = px->pairs;
        if (px->pairs)
                px->pairs->prev = p;
        px->pairs = p;
        px->npairs++;

        if ((r = uv_accept(server, (uv_stream_t *)&p->down)) < 0) {
                fprintf(stderr, "slowproxy: accept: %s\n", uv_strerror(r));
                p->error = uv_strerror(r);
                pair_close(p);
                return;
        }
        if (uv_tcp_getpeername(&p->down, (struct sockaddr *)&ss, &sslen) == 0 &&
            ss.ss_family == AF_INET) {
                const struct sockaddr_in *sin = (const void *)&ss;
                char ip[INET_ADDRSTRLEN];

                uv_ip4_name(sin, ip, sizeof(ip));
                snprintf(peer, sizeof(peer), "%s:%d", ip, ntohs(sin->sin_port));
        }
        fprintf(stderr, "slowproxy: conn %lu open from %s\n", p->id, peer);
        uv_tcp_nodelay(&p->down, 1);
        if ((r = uv_tcp_connect(&p->creq, &p->up,
                                (const struct sockaddr *)&px->upstream,
                                on_connect)) < 0) {
                fprintf(stderr, "slowproxy: conn %lu: upstream %s: %s\n", p->id,
                        px->upstream_str, uv_strerror(r));
                p->error = "no upstream";
                pair_close(p);
                return;
        }
        if ((r = uv_read_start((uv_stream_t *)&p->down, on_alloc, on_read)) <
            0) {
                p->error = uv_strerror(r);
                pair_close(p);
                return;
        }
        p->d[0].reading = 1;
}

static void on_signal(uv_signal_t *sig, int signum) {
        proxy_t *px = sig->data;

        fprintf(stderr, "slowproxy: %s, exiting\n", strsignal(signum));
        uv_close((uv_handle_t *)&px->listener, NULL);
        uv_close((uv_handle_t *)&px->delay_timer, NULL);
        uv_close((uv_handle_t *)&px->sigterm, NULL);
        uv_close((uv_handle_t *)&px->sigint, NULL);
        while (px->pairs)
                pair_close(px->pairs);
}

/* Two descriptors a pair: a soft limit of 1024 would refuse pairs (EMFILE)
 * before MAX_PAIRS does. */
static void raise_fd_limit(void) {
        const rlim_t want = 2 * MAX_PAIRS + 64;
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= want)
                return;
        rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
        setrlimit(RLIMIT_NOFILE, &rl);
}

static void usage(void) {
        fprintf(stderr,
                "usage: slowproxy LISTEN_HOST:PORT UPSTREAM_HOST:PORT "
                "DELAY_FILE\n"
                "\n"
                "Forwards each connection to UPSTREAM, every chunk in either\n"
                "direction no earlier than DELAY_FILE's milliseconds after it\n"
                "was read (missing or empty file: 0; read every 100 ms).\n");
}

int main(int argc, char **argv) {
        static proxy_t px;
        struct sockaddr_in listen_addr, bound;
        int namelen = sizeof(bound), r;
        char ip[INET_ADDRSTRLEN];
        uv_loop_t loop;

        if (argc != 4) {
                usage();
                return 2;
        }
        if (parse_addr(argv[1], &listen_addr) < 0) {
                fprintf(stderr, "slowproxy: %s: not an IPv4 HOST:PORT\n",
                        argv[1]);
                return 2;
        }
        if (parse_addr(argv[2], &px.upstream) < 0 ||
            px.upstream.sin_port == 0) {
                fprintf(stderr, "slowproxy: %s: not an IPv4 HOST:PORT\n",
                        argv[2]);
                return 2;
        }
        px.upstream_str = argv[2];
        px.delay_file = argv[3];
        /* A peer that is gone must fail the write, not end the process. */
        signal(SIGPIPE, SIG_IGN);
        raise_fd_limit();

        check(uv_loop_init(&loop), "uv_loop_init");
        px.loop = &loop;

        check(uv_tcp_init(&loop, &px.listener), "uv_tcp_init");
        px.listener.data = &px;
        if ((r = uv_tcp_bind(&px.listener,
                             (const struct sockaddr *)&listen_addr, 0)) < 0 ||
            (r = uv_listen((uv_stream_t *)&px.listener, 128, on_connection)) <
                0 ||
            (r = uv_tcp_getsockname(&px.listener, (struct sockaddr *)&bound,
                                    &namelen)) < 0) {
                fprintf(stderr, "slowproxy: listen %s: %s\n", argv[1],
                        uv_strerror(r));
                uv_close((uv_handle_t *)&px.listener, NULL);
                uv_run(&loop, UV_RUN_DEFAULT);
                uv_loop_close(&loop);
                return 1;
        }

        check(uv_timer_init(&loop, &px.delay_timer), "uv_timer_init");
        px.delay_timer.data = &px;
        check(uv_timer_start(&px.delay_timer, on_delay_timer, DELAY_POLL_MS,
                             DELAY_POLL_MS),
              "uv_timer_start");
        check(uv_signal_init(&loop, &px.sigterm), "uv_signal_init");
        check(uv_signal_init(&loop, &px.sigint), "uv_signal_init");
        px.sigterm.data = px.sigint.data = &px;
        check(uv_signal_start(&px.sigterm, on_signal, SIGTERM),
              "uv_signal_start");
        check(uv_signal_start(&px.sigint, on_signal, SIGINT),
              "uv_signal_start");

        uv_ip4_name(&bound, ip, sizeof(ip));
        fprintf(stderr, "slowproxy: %s:%d -> %s\n", ip, ntohs(bound.sin_port),
                argv[2]);
        /* Before the first connection is accepted (in uv_run). */
        delay_reload(&px);

        uv_run(&loop, UV_RUN_DEFAULT);
        if ((r = uv_loop_close(&loop)) < 0)
                fprintf(stderr, "slowproxy: uv_loop_close: %s\n",
                        uv_strerror(r));
        return 0;
}
