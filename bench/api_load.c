/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_load — PUT timers through sluice's HTTP API at a fixed concurrency
 * and report throughput and latency.
 *
 *   api_load -a HOST:PORT -p PIPELINE -T TARGET -n COUNT [-c CONC]
 *            [--token TOKEN] [--delay 1h] [--size BYTES] [--seconds S]
 *            [--prefix P]
 *
 * CONC threads each keep one HTTP/1.1 keep-alive connection and send
 * PUT /v1/pipelines/PIPELINE/timers/<id> one at a time (ids t<i>, all
 * distinct), each answered only once the record is durable in the input
 * topic.  Latency is request sent → answer read.  Any answer but 200/201
 * counts as an error and is printed once.  The token defaults to
 * $SLUICE_API_TOKENS.  --seconds stops sending after S seconds (a load
 * beside another measurement; COUNT is then a ceiling); --prefix starts
 * the ids with P instead of "t" (runs that must not replace each other's
 * timers).
 *
 * Result line:
 *   api_load count=N errors=E conc=C seconds=S rate=R p50_ms=X p99_ms=Y
 * max_ms=Z
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char *host = "127.0.0.1", *port = "8080", *pipeline, *target;
static const char *token, *delay = "1h", *prefix = "t";
static int64_t count, size = 100, stop_at_us;
static atomic_llong next_id, errors;
static double *lat_ms; /* by request index */
static atomic_int error_printed;

static int64_t now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int dial(void) {
        struct addrinfo hints = {0}, *res;
        int fd, one = 1;
        hints.ai_socktype = SOCK_STREAM;
        if (getaddrinfo(host, port, &hints, &res))
                return -1;
        fd = socket(res->ai_family, SOCK_STREAM, 0);
        if (fd == -1 || connect(fd, res->ai_addr, res->ai_addrlen)) {
                if (fd != -1)
                        close(fd);
                freeaddrinfo(res);
                return -1;
        }
        freeaddrinfo(res);
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        return fd;
}

/* Reads one response; returns its status, or -1 (connection lost). */
static int read_response(int fd, char *buf, size_t cap) {
        size_t len = 0;
        char *end;
        long clen = 0;
        int status;
        for (;;) {
                ssize_t r = recv(fd, buf + len, cap - 1 - len, 0);
                if (r <= 0)
                        return -1;
                len += (size_t)r;
                buf[len] = '\0';
                if ((end = strstr(buf, "\r\n\r\n")))
                        break;
                if (len >= cap - 1)
                        return -1;
        }
        if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
                return -1;
        char *cl = strcasestr(buf, "\r\nContent-Length:");
        if (cl && cl < end)
                clen = strtol(cl + 17, NULL, 10);
        size_t have = len - (size_t)(end + 4 - buf);
        while ((long)have < clen) {
                ssize_t r = recv(fd, buf, cap - 1, 0);
                if (r <= 0)
                        return -1;
                have += (size_t)r;
        }
        if (status != 200 && status != 201 &&
            !atomic_exchange(&error_printed, 1))
                fprintf(stderr, "api_load: answer %d: %.300s\n", status,
                        end + 4);
        return status;
}

static void *worker(void *arg) {
        char *req = malloc(8192 + (size_t)size),
             *body = malloc(512 + (size_t)size);
        char buf[16384];
        int fd = dial();
        (void)arg;
        char *value = malloc((size_t)size + 1);
        memset(value, 'x', (size_t)size);
        value[size] = '\0';
        for (;;) {
                long long i = atomic_fetch_add(&next_id, 1);
                int blen, rlen, status = -1;
                int64_t t0;
                if (i >= count || (stop_at_us && now_us() >= stop_at_us))
                        break;
                blen = snprintf(body, 512 + (size_t)size,
                                "{\"target\":\"%s\",\"delay\":\"%s\","
                                "\"value\":\"%s\"}",
                                target, delay, value);
                rlen = snprintf(
                    req, 8192 + (size_t)size,
                    "PUT /v1/pipelines/%s/timers/%s%lld HTTP/1.1\r\n"
                    "Host: %s:%s\r\nAuthorization: Bearer %s\r\n"
                    "Content-Type: application/json\r\n"
                    "Content-Length: %d\r\n\r\n%s",
                    pipeline, prefix, i, host, port, token, blen, body);
                for (int attempt = 0; attempt < 2; attempt++) {
                        if (fd == -1 && (fd = dial()) == -1)
                                break;
                        t0 = now_us();
                        if (send(fd, req, (size_t)rlen, MSG_NOSIGNAL) != rlen ||
                            (status = read_response(fd, buf, sizeof(buf))) ==
                                -1) {
                                close(fd);
                                fd = -1;
                                status = -1;
                                continue;
                        }
                        lat_ms[i] = (double)(now_us() - t0) / 1000.0;
                        break;
                }
                if (status != 200 && status != 201) {
                        atomic_fetch_add(&errors, 1);
                        lat_ms[i] = -1;
                }
        }
        if (fd != -1)
                close(fd);
        free(req);
        free(body);
        free(value);
        return NULL;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static void usage(void) {
        fprintf(stderr,
                "usage: api_load -a HOST:PORT -p PIPELINE -T TARGET -n COUNT "
                "[-c CONC] [--token T] [--delay D] [--size BYTES] "
                "[--seconds S] [--prefix P]\n");
        exit(2);
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
            {"addr", required_argument, NULL, 'a'},
            {"pipeline", required_argument, NULL, 'p'},
            {"target", required_argument, NULL, 'T'},
            {"count", required_argument, NULL, 'n'},
            {"conc", required_argument, NULL, 'c'},
            {"token", required_argument, NULL, 't'},
            {"delay", required_argument, NULL, 'd'},
            {"size", required_argument, NULL, 's'},
            {"seconds", required_argument, NULL, 'S'},
            {"prefix", required_argument, NULL, 'P'},
            {NULL, 0, NULL, 0}};
        double seconds = 0;
        int conc = 16, c;
        char *addr = NULL;
        pthread_t *th;
        int64_t t0, t1;
        double *ok;
        size_t okn = 0;

        while ((c = getopt_long(argc, argv, "a:p:T:n:c:t:d:s:S:P:h", opts,
                                NULL)) != -1) {
                switch (c) {
                case 'a':
                        addr = strdup(optarg);
                        break;
                case 'p':
                        pipeline = optarg;
                        break;
                case 'T':
                        target = optarg;
                        break;
                case 'n':
                        count = atoll(optarg);
                        break;
                case 'c':
                        conc = atoi(optarg);
                        break;
                case 't':
                        token = optarg;
                        break;
                case 'd':
                        delay = optarg;
                        break;
                case 's':
                        size = atoll(optarg);
                        break;
                case 'S':
                        seconds = atof(optarg);
                        break;
                case 'P':
                        prefix = optarg;
                        break;
                default:
                        usage();
                }
        }
        if (!addr || !pipeline || !target || count <= 0 || conc <= 0 ||
            size < 0 || size > 100000)
                usage();
        if (!token && !(token = getenv("SLUICE_API_TOKENS")))
                usage();
        char *colon = strrchr(addr, ':');
        if (!colon)
                usage();
        *colon = '\0';
        host = addr;
        port = colon + 1;

        lat_ms = malloc((size_t)count * sizeof(double));
        for (int64_t i = 0; i < count; i++)
                lat_ms[i] = -2; /* never sent (--seconds ran out) */
        th = calloc((size_t)conc, sizeof(*th));
        t0 = now_us();
        if (seconds > 0)
                stop_at_us = t0 + (int64_t)(seconds * 1e6);
        for (int i = 0; i < conc; i++)
                pthread_create(&th[i], NULL, worker, NULL);
        for (int i = 0; i < conc; i++)
                pthread_join(th[i], NULL);
        t1 = now_us();

        ok = malloc((size_t)count * sizeof(double));
        for (int64_t i = 0; i < count; i++)
                if (lat_ms[i] >= 0)
                        ok[okn++] = lat_ms[i];
        qsort(ok, okn, sizeof(double), cmp_double);
        double secs = (double)(t1 - t0) / 1e6;
        printf("api_load count=%lld errors=%lld conc=%d seconds=%.3f "
               "rate=%.0f p50_ms=%.2f p99_ms=%.2f max_ms=%.2f\n",
               (long long)okn, (long long)atomic_load(&errors), conc, secs,
               (double)okn / secs, okn ? ok[okn / 2] : -1,
               okn ? ok[(size_t)((double)okn * 0.99)] : -1,
               okn ? ok[okn - 1] : -1);
        free(ok);
        free(lat_ms);
        free(th);
        free(addr);
        return atomic_load(&errors) ? 1 : 0;
}
