/*
 * tcpprobe: the one client/server pair the real-TCP comparison runs, identically, in the qemu guest (real Linux
 * TCP over netem) and on the host (through linkcond). Built static, so the guest needs nothing but the binary.
 *
 * Protocol: the client writes a request line, a decimal byte count and '\n'; the server answers with that many
 * bytes, or streams until the client closes when the count is 0. One connection may carry several requests.
 * Both ends set TCP_NODELAY, so a request or the last partial segment is never held back by Nagle.
 *
 * Every time is measured with CLOCK_MONOTONIC from just before connect() (or from writing a request on an open
 * connection) to the arrival of the last byte, and printed in milliseconds, one result a line:
 *   tcpprobe serve HOST PORT
 *   tcpprobe fetch HOST PORT BYTES [IDLE_MS BYTES2]   -> "fetch BYTES MS" [then "idle BYTES2 MS"]
 *   tcpprobe bulk HOST PORT SECONDS                   -> "bulk SECONDS MBITS" (payload Mbit/s, from connect())
 *   tcpprobe latency HOST PORT SECONDS INTERVAL_MS    -> "latency IDLE_P50 LOADED_P50 LOADED_P90 COUNT MBITS"
 *   tcpprobe capture IFACE                            -> one line per TCP segment, until SIGTERM (below)
 *   tcpprobe flood HOST PORT KBITS SECONDS BYTES      -> "flood SENT" (UDP datagrams the kernel took)
 *   tcpprobe sink HOST PORT QUIET_MS                  -> "ready PORT", then "sink COUNT BYTES SPAN_MS"
 * fetch with IDLE_MS keeps the connection, waits IDLE_MS and then times a second request of BYTES2 on it: the
 * request after idle, which pays Linux's slow start after idle (tcp_slow_start_after_idle) on a real stack.
 * latency times 1-byte request/response pings on a second connection while the first downloads in bulk: the
 * working latency of the link's queue. MBITS is the download's payload rate while the pings were counted.
 * capture prints every TCP segment IFACE sends or receives, as the interface's tap sees it (after the sender's
 * qdisc, before the receiver's stack): "MS DIR SPORT DPORT SEQ ACK FLAGS LENGTH [SACK START-END ...]", MS the
 * kernel's receive timestamp (CLOCK_REALTIME, so captures on two interfaces of one guest compare), DIR out or in,
 * SEQ and ACK as on the wire, FLAGS of SFRPA, LENGTH the payload bytes. The guest has no tcpdump.
 * Exit status 0 on success, 1 with a message on stderr otherwise.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { chunk_bytes = 65536, max_pings = 100000 };

static char chunk[chunk_bytes];

/* Payload bytes the latency run's bulk connection has read so far. */
static long long bulk_bytes;

static void die(const char *what) {
    fprintf(stderr, "tcpprobe: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void fail(const char *message) {
    fprintf(stderr, "tcpprobe: %s\n", message);
    exit(1);
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static long long parse_count(const char *text, const char *name) {
    char *end = NULL;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < 0) {
        fprintf(stderr, "tcpprobe: %s \"%s\": expected a non-negative integer\n", name, text);
        exit(1);
    }
    return value;
}

static struct sockaddr_in parse_address(const char *host, const char *port) {
    struct sockaddr_in address = { .sin_family = AF_INET };
    long long number = parse_count(port, "port");
    if (number > 65535 || inet_pton(AF_INET, host, &address.sin_addr) != 1) {
        fprintf(stderr, "tcpprobe: \"%s:%s\": expected an IPv4 address and a port\n", host, port);
        exit(1);
    }
    address.sin_port = htons((uint16_t)number);
    return address;
}

static void set_nodelay(int fd) {
    int on = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) != 0) die("setsockopt TCP_NODELAY");
}

static int connect_to(struct sockaddr_in address) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) die("connect");
    set_nodelay(fd);
    return fd;
}

static void write_all(int fd, const char *bytes, size_t count) {
    while (count > 0) {
        ssize_t written = write(fd, bytes, count);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) die("write");
        bytes += written;
        count -= (size_t)written;
    }
}

static void request(int fd, long long bytes) {
    char line[32];
    int length = snprintf(line, sizeof line, "%lld\n", bytes);
    write_all(fd, line, (size_t)length);
}

/* Reads exactly `bytes` bytes of response, failing if the stream ends early. */
static void receive(int fd, long long bytes) {
    while (bytes > 0) {
        size_t want = bytes < chunk_bytes ? (size_t)bytes : chunk_bytes;
        ssize_t got = read(fd, chunk, want);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) die("read");
        if (got == 0) fail("the server closed the connection before the last byte");
        bytes -= got;
    }
}

/* Serves one connection: answers each request line, then exits when the client closes. */
static void serve_connection(int fd) {
    set_nodelay(fd);
    char line[32];
    size_t used = 0;
    for (;;) {
        ssize_t got = read(fd, line + used, 1);
        if (got <= 0) return;
        if (line[used] != '\n') {
            if (++used == sizeof line) return;
            continue;
        }
        line[used] = '\0';
        used = 0;
        long long bytes = strtoll(line, NULL, 10);
        if (bytes == 0) {
            for (;;) {
                if (write(fd, chunk, chunk_bytes) <= 0) return;
            }
        }
        while (bytes > 0) {
            size_t want = bytes < chunk_bytes ? (size_t)bytes : chunk_bytes;
            ssize_t written = write(fd, chunk, want);
            if (written <= 0) return;
            bytes -= written;
        }
    }
}

static int serve(struct sockaddr_in address) {
    signal(SIGPIPE, SIG_IGN);
    signal(SIGCHLD, SIG_IGN);
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    if (listener < 0) die("socket");
    int on = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (bind(listener, (struct sockaddr *)&address, sizeof address) != 0) die("bind");
    if (listen(listener, 64) != 0) die("listen");
    socklen_t length = sizeof address;
    getsockname(listener, (struct sockaddr *)&address, &length);
    printf("ready %u\n", ntohs(address.sin_port));
    fflush(stdout);
    for (;;) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            die("accept");
        }
        pid_t child = fork();
        if (child < 0) die("fork");
        if (child == 0) {
            close(listener);
            serve_connection(fd);
            _exit(0);
        }
        close(fd);
    }
}

static int fetch(struct sockaddr_in address, long long bytes, long long idle_ms, long long bytes_after_idle) {
    double started = now_ms();
    int fd = connect_to(address);
    request(fd, bytes);
    receive(fd, bytes);
    printf("fetch %lld %.3f\n", bytes, now_ms() - started);
    if (bytes_after_idle > 0) {
        struct timespec idle = { .tv_sec = idle_ms / 1000, .tv_nsec = (idle_ms % 1000) * 1000000 };
        while (nanosleep(&idle, &idle) != 0 && errno == EINTR) {}
        double requested = now_ms();
        request(fd, bytes_after_idle);
        receive(fd, bytes_after_idle);
        printf("idle %lld %.3f\n", bytes_after_idle, now_ms() - requested);
    }
    close(fd);
    return 0;
}

static int bulk(struct sockaddr_in address, long long seconds) {
    double started = now_ms();
    double deadline = started + (double)seconds * 1e3;
    int fd = connect_to(address);
    request(fd, 0);
    long long total = 0;
    for (;;) {
        double left = deadline - now_ms();
        if (left <= 0) break;
        struct pollfd ready = { .fd = fd, .events = POLLIN };
        int count = poll(&ready, 1, (int)left + 1);
        if (count < 0 && errno == EINTR) continue;
        if (count < 0) die("poll");
        if (count == 0) continue;
        ssize_t got = read(fd, chunk, chunk_bytes);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) die("read");
        if (got == 0) fail("the server closed the bulk stream");
        total += got;
    }
    double elapsed = now_ms() - started;
    printf("bulk %lld %.4f\n", seconds, (double)total * 8.0 / (elapsed * 1e3));
    close(fd);
    return 0;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The value below which `fraction` of the sorted samples lie (nearest rank). */
static double quantile(double *sorted, int count, double fraction) {
    int rank = (int)(fraction * (double)count + 0.999999);
    if (rank < 1) rank = 1;
    return sorted[rank - 1];
}

/* One 1-byte ping on an open connection, in ms; the bulk connection is drained while waiting. */
static double ping(int pinger, int bulk_fd) {
    char byte;
    double sent = now_ms();
    request(pinger, 1);
    for (;;) {
        struct pollfd ready[2] = { { .fd = pinger, .events = POLLIN }, { .fd = bulk_fd, .events = POLLIN } };
        int count = poll(ready, bulk_fd >= 0 ? 2 : 1, 60000);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) fail("a ping got no answer within 60 s");
        if (bulk_fd >= 0 && (ready[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t got = read(bulk_fd, chunk, chunk_bytes);
            if (got <= 0) fail("the bulk stream ended during the latency run");
            bulk_bytes += got;
        }
        if (ready[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t got = read(pinger, &byte, 1);
            if (got != 1) fail("the ping connection ended");
            return now_ms() - sent;
        }
    }
}

/* Drains the bulk connection until `until` (ms, CLOCK_MONOTONIC). */
static void drain_until(int bulk_fd, double until) {
    for (;;) {
        double left = until - now_ms();
        if (left <= 0) return;
        struct pollfd ready = { .fd = bulk_fd, .events = POLLIN };
        int count = poll(&ready, 1, (int)left + 1);
        if (count < 0 && errno == EINTR) continue;
        if (count < 0) die("poll");
        if (count == 0) continue;
        ssize_t got = read(bulk_fd, chunk, chunk_bytes);
        if (got <= 0) fail("the bulk stream ended during the latency run");
        bulk_bytes += got;
    }
}

static int latency(struct sockaddr_in address, long long seconds, long long interval_ms) {
    static double samples[max_pings];
    int pinger = connect_to(address);
    enum { idle_pings = 5 };
    double idle[idle_pings];
    for (int i = 0; i < idle_pings; i++) {
        idle[i] = ping(pinger, -1);
        struct timespec gap = { .tv_sec = 0, .tv_nsec = 100000000 };
        nanosleep(&gap, NULL);
    }
    qsort(idle, idle_pings, sizeof idle[0], compare_doubles);
    int bulk_fd = connect_to(address);
    request(bulk_fd, 0);
    double started = now_ms();
    /* The first quarter lets the download fill the queue; pings are counted after it. */
    double counting = started + (double)seconds * 250.0;
    double deadline = started + (double)seconds * 1e3;
    drain_until(bulk_fd, counting);
    long long counted_from = bulk_bytes;
    double counting_started = now_ms();
    int count = 0;
    double next = now_ms();
    while (now_ms() < deadline && count < max_pings) {
        samples[count++] = ping(pinger, bulk_fd);
        next += (double)interval_ms;
        if (next < now_ms()) next = now_ms();
        drain_until(bulk_fd, next);
    }
    if (count == 0) fail("no ping completed under load");
    qsort(samples, (size_t)count, sizeof samples[0], compare_doubles);
    double mbits = (double)(bulk_bytes - counted_from) * 8.0 / ((now_ms() - counting_started) * 1e3);
    printf("latency %.3f %.3f %.3f %d %.4f\n", quantile(idle, idle_pings, 0.5), quantile(samples, count, 0.5),
           quantile(samples, count, 0.9), count, mbits);
    close(bulk_fd);
    close(pinger);
    return 0;
}

static volatile sig_atomic_t capture_stopped;

static void stop_capture(int signal_number) {
    (void)signal_number;
    capture_stopped = 1;
}

/* Prints one IPv4 packet's TCP header as a capture line; anything else is skipped. */
static void print_segment(const unsigned char *packet, size_t size, const struct timespec *at, int outgoing) {
    if (size < 20 || (packet[0] >> 4) != 4 || packet[9] != IPPROTO_TCP) return;
    size_t ip_header = (size_t)(packet[0] & 0x0f) * 4;
    size_t total = (size_t)packet[2] << 8 | packet[3];
    if (total > size || ip_header + 20 > total) return;
    const unsigned char *tcp = packet + ip_header;
    size_t tcp_header = (size_t)(tcp[12] >> 4) * 4;
    if (tcp_header < 20 || ip_header + tcp_header > total) return;
    uint32_t seq, ack;
    memcpy(&seq, tcp + 4, 4);
    memcpy(&ack, tcp + 8, 4);
    char flags[6] = "";
    const char *names = "SFRPA";
    const unsigned char bits[] = { 0x02, 0x01, 0x04, 0x08, 0x10 };
    int used = 0;
    for (int i = 0; i < 5; i++)
        if (tcp[13] & bits[i]) flags[used++] = names[i];
    flags[used] = '\0';
    printf("%.3f %s %u %u %u %u %s %zu", (double)at->tv_sec * 1e3 + (double)at->tv_nsec / 1e6, outgoing ? "out" : "in",
           (unsigned)(tcp[0] << 8 | tcp[1]), (unsigned)(tcp[2] << 8 | tcp[3]), ntohl(seq), ntohl(ack),
           used ? flags : "-", total - ip_header - tcp_header);
    for (size_t i = 20; i < tcp_header;) {
        unsigned char kind = tcp[i];
        if (kind == 0) break;
        if (kind == 1) { i++; continue; }
        if (i + 1 >= tcp_header || tcp[i + 1] < 2 || i + tcp[i + 1] > tcp_header) break;
        if (kind == 5) {
            printf(" SACK");
            for (size_t block = i + 2; block + 8 <= i + tcp[i + 1]; block += 8) {
                uint32_t start, end;
                memcpy(&start, tcp + block, 4);
                memcpy(&end, tcp + block + 4, 4);
                printf(" %u-%u", ntohl(start), ntohl(end));
            }
        }
        i += tcp[i + 1];
    }
    putchar('\n');
}

/* Prints every TCP segment through `interface` until SIGTERM or SIGINT. Bound to every protocol: a tap sees a
 * device's outgoing packets only then (dev_queue_xmit_nit serves ptype_all alone). */
static int capture(const char *interface) {
    int fd = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_ALL));
    if (fd < 0) die("socket AF_PACKET");
    struct sockaddr_ll link = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
    link.sll_ifindex = (int)if_nametoindex(interface);
    if (link.sll_ifindex == 0) die(interface);
    if (bind(fd, (struct sockaddr *)&link, sizeof link) != 0) die("bind");
    int on = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) != 0) die("setsockopt SO_TIMESTAMPNS");
    struct sigaction action = { .sa_handler = stop_capture };
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    static unsigned char packet[65536];
    while (!capture_stopped) {
        struct sockaddr_ll from;
        char control[CMSG_SPACE(sizeof(struct timespec))];
        struct iovec vector = { .iov_base = packet, .iov_len = sizeof packet };
        struct msghdr message = { .msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &vector, .msg_iovlen = 1,
                                  .msg_control = control, .msg_controllen = sizeof control };
        ssize_t got = recvmsg(fd, &message, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) die("recvmsg");
        struct timespec at = { 0 };
        for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header))
            if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_TIMESTAMPNS)
                memcpy(&at, CMSG_DATA(header), sizeof at);
        if (from.sll_protocol != htons(ETH_P_IP)) continue;
        print_segment(packet, (size_t)got, &at, from.sll_pkttype == PACKET_OUTGOING);
    }
    fflush(stdout);
    return 0;
}

enum { datagram_limit = 65507, sink_buffer_bytes = 4 << 20, first_datagram_wait_ms = 60000 };

static int flood(struct sockaddr_in address, long long kbits, long long seconds, long long bytes) {
    if (bytes < 1 || bytes > datagram_limit || kbits < 1) fail("flood: BYTES must be 1-65507 and KBITS positive");
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) die("socket");
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) die("connect");
    double interval_ms = (double)bytes * 8.0 / (double)kbits;
    long long total = (long long)((double)seconds * 1e3 / interval_ms);
    double started = now_ms();
    long long attempted = 0, sent = 0;
    while (attempted < total) {
        long long due = (long long)((now_ms() - started) / interval_ms) + 1;
        for (; attempted < due && attempted < total; attempted++) {
            if (send(fd, chunk, (size_t)bytes, 0) >= 0) sent++;
            else if (errno != ENOBUFS && errno != ECONNREFUSED) die("send");
        }
        double next = started + (double)attempted * interval_ms - now_ms();
        if (next > 0) {
            long long nanoseconds = (long long)(next * 1e6);
            struct timespec pause = { .tv_sec = nanoseconds / 1000000000, .tv_nsec = nanoseconds % 1000000000 };
            nanosleep(&pause, NULL);
        }
    }
    printf("flood %lld\n", sent);
    return 0;
}

static int sink(struct sockaddr_in address, long long quiet_ms) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) die("socket");
    int size = sink_buffer_bytes;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) != 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0) die("bind");
    socklen_t length = sizeof address;
    getsockname(fd, (struct sockaddr *)&address, &length);
    printf("ready %u\n", ntohs(address.sin_port));
    fflush(stdout);
    long long count = 0, received = 0;
    double first = 0, last = 0;
    struct pollfd waiting = { .fd = fd, .events = POLLIN };
    for (;;) {
        int ready = poll(&waiting, 1, count == 0 ? first_datagram_wait_ms : (int)quiet_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) die("poll");
        if (ready == 0) break;
        ssize_t got = recv(fd, chunk, chunk_bytes, 0);
        if (got < 0) die("recv");
        last = now_ms();
        if (count == 0) first = last;
        count++;
        received += got;
    }
    printf("sink %lld %lld %.3f\n", count, received, last - first);
    return 0;
}

static void usage(void) {
    fail("usage: tcpprobe serve HOST PORT | fetch HOST PORT BYTES [IDLE_MS BYTES] | bulk HOST PORT SECONDS"
         " | latency HOST PORT SECONDS INTERVAL_MS | capture IFACE | flood HOST PORT KBITS SECONDS BYTES"
         " | sink HOST PORT QUIET_MS");
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 3 && strcmp(argv[1], "capture") == 0) return capture(argv[2]);
    if (argc < 4) usage();
    const char *mode = argv[1];
    struct sockaddr_in address = parse_address(argv[2], argv[3]);
    if (strcmp(mode, "serve") == 0 && argc == 4) return serve(address);
    if (strcmp(mode, "fetch") == 0 && argc == 5) return fetch(address, parse_count(argv[4], "BYTES"), 0, 0);
    if (strcmp(mode, "fetch") == 0 && argc == 7)
        return fetch(address, parse_count(argv[4], "BYTES"), parse_count(argv[5], "IDLE_MS"), parse_count(argv[6], "BYTES"));
    if (strcmp(mode, "bulk") == 0 && argc == 5) return bulk(address, parse_count(argv[4], "SECONDS"));
    if (strcmp(mode, "latency") == 0 && argc == 6)
        return latency(address, parse_count(argv[4], "SECONDS"), parse_count(argv[5], "INTERVAL_MS"));
    if (strcmp(mode, "flood") == 0 && argc == 7)
        return flood(address, parse_count(argv[4], "KBITS"), parse_count(argv[5], "SECONDS"), parse_count(argv[6], "BYTES"));
    if (strcmp(mode, "sink") == 0 && argc == 5) return sink(address, parse_count(argv[4], "QUIET_MS"));
    usage();
    return 1;
}
