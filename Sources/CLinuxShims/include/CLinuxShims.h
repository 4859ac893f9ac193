#ifndef CLINUXSHIMS_H
#define CLINUXSHIMS_H


#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <fcntl.h>
#include <errno.h>
#include <unistd.h>
#include <signal.h>
#include <time.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/resource.h>

static inline int clinux_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

static inline int clinux_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event ev;
    ev.events = events;
    ev.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &ev);
}

/// Waits for events; `out_events[i]` and `out_data[i]` receive each ready event.
static inline int clinux_epoll_wait(int epfd, uint32_t *out_events, uint64_t *out_data, int max, int timeout_ms) {
    struct epoll_event evs[256];
    if (max > 256) max = 256;
    int n = epoll_wait(epfd, evs, max, timeout_ms);
    for (int i = 0; i < n; i++) {
        out_events[i] = evs[i].events;
        out_data[i] = evs[i].data.u64;
    }
    return n;
}

static inline int clinux_timerfd_create(void) {
    return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
}

/// Arms the timer for an absolute CLOCK_MONOTONIC deadline in nanoseconds; 0 disarms it.
static inline int clinux_timerfd_set_absolute(int fd, int64_t deadline_ns) {
    struct itimerspec spec = {0};
    if (deadline_ns > 0) {
        spec.it_value.tv_sec = deadline_ns / 1000000000LL;
        spec.it_value.tv_nsec = deadline_ns % 1000000000LL;
    }
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, NULL);
}

/// Sets the calling thread's timer slack (how late the kernel may fire its timers to coalesce wake-ups).
static inline int clinux_set_timer_slack(unsigned long nanoseconds) { return prctl(PR_SET_TIMERSLACK, nanoseconds, 0, 0, 0); }

static inline int clinux_eventfd_create(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

static inline int64_t clinux_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline int clinux_errno(void) { return errno; }

/// Names the calling thread (the kernel keeps 15 bytes); prctl is variadic, which Swift cannot call.
static inline int clinux_name_current_thread(const char *name) { return prctl(PR_SET_NAME, name, 0, 0, 0); }
/// The calling thread's kernel id, as /proc/self/task lists it (defined in shims.c: gettid needs _GNU_SOURCE).
int clinux_gettid(void);
/// Whether descriptors `a` and `b` of this process refer to the same open file (kcmp KCMP_FILE): 1 or 0, or -1
/// with errno (ENOSYS on a kernel without kcmp). Lets a leak check tell one epoll or eventfd from another.
int clinux_same_open_file(int a, int b);
static inline void clinux_set_errno(int value) { errno = value; }

static inline int clinux_socket_nonblocking(int domain, int type) {
    return socket(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

/// accept4 with SOCK_NONBLOCK | SOCK_CLOEXEC; defined in shims.c, which needs _GNU_SOURCE for accept4.
int clinux_accept_nonblocking(int fd, struct sockaddr_storage *addr, socklen_t *len);

/// One received datagram's facts, filled by `clinux_receive_datagrams`.
struct clinux_datagram_slot {
    /// Payload bytes written to the slot's buffer.
    uint32_t length;
    /// Length of the sender's address in the slot's `sockaddr_storage`.
    socklen_t address_length;
    /// Nonzero when the kernel attached its drop counter (SO_RXQ_OVFL), which it does once it has dropped any.
    uint32_t has_drop_count;
    /// Datagrams the kernel dropped on this socket, in total, when this one was queued.
    uint32_t drop_count;
    /// When the datagram reached the socket, on CLOCK_MONOTONIC, if the socket has SO_TIMESTAMPNS on and the
    /// kernel stamped it (the stamp is CLOCK_REALTIME, moved by the clocks' offset at the call); else 0.
    int64_t arrival_ns;
};

/// Receives up to `count` (at most 64) datagrams with one recvmmsg(MSG_DONTWAIT): datagram i lands in
/// `buffers + i * slot_size`, its sender in `addresses[i]` and its facts in `slots[i]`. Returns how many, or -1
/// with errno. Defined in shims.c, which needs _GNU_SOURCE for recvmmsg.
int clinux_receive_datagrams(int fd, void *buffers, size_t slot_size, struct sockaddr_storage *addresses,
                             struct clinux_datagram_slot *slots, unsigned int count);

/// Where one outgoing datagram of a batch is: its bytes at `offset` in the batch's payload, and its destination's
/// address length (0: the socket's connected peer).
struct clinux_outgoing_datagram {
    uint32_t offset;
    uint32_t length;
    socklen_t address_length;
};

/// Sends `count` (at most 64) datagrams with one sendmmsg(MSG_DONTWAIT | MSG_NOSIGNAL): datagram i is
/// `payload + datagrams[i].offset`, sent to `addresses[i]` unless its address length is 0. With `segment`, runs of
/// datagrams that lie back to back in `payload`, go to the same destination and have the same size (the run's
/// last may be shorter) go as one message the kernel cuts into those datagrams (UDP GSO, UDP_SEGMENT): the receiver
/// still gets each datagram whole. Returns how many datagrams the socket took, from the first, or -1 with errno for
/// the first message, which held `*first_message` datagrams. Defined in shims.c (needs _GNU_SOURCE).
int clinux_send_datagrams(int fd, const void *payload, const struct sockaddr_storage *addresses,
                          const struct clinux_outgoing_datagram *datagrams, unsigned int count, int segment,
                          unsigned int *first_message);

/// Reads up to `length` bytes from a stream socket without blocking, like read(2). When the socket has
/// SO_TIMESTAMPNS on and the kernel stamped what was read, `*arrival_ns` is when the last of it arrived, on
/// CLOCK_MONOTONIC (the stamp is CLOCK_REALTIME, moved by the clocks' current offset); else 0.
ssize_t clinux_recv_stamped(int fd, void *buffer, size_t length, int64_t *arrival_ns);

/// Opens a non-blocking, close-on-exec pipe (pipe2 with O_NONBLOCK | O_CLOEXEC).
int clinux_pipe_nonblocking(int fds[2]);
/// Moves up to `length` bytes between descriptors in the kernel, one of which is a pipe, without blocking.
ssize_t clinux_splice_nonblocking(int from, int to, size_t length);
/// Asks for a pipe of `size` bytes (F_SETPIPE_SZ); returns the size granted.
int clinux_pipe_set_size(int fd, int size);
/// Puts the calling thread in SCHED_FIFO at `priority`; threads and processes it starts later inherit it only when
/// `passed_on` (else SCHED_RESET_ON_FORK). -1 with errno (EPERM without CAP_SYS_NICE or a high enough RLIMIT_RTPRIO).
int clinux_set_realtime_fifo(int priority, int passed_on);
/// The process's soft limit on open descriptors (RLIMIT_NOFILE); -1 when it cannot be read, or it is unlimited.
static inline long clinux_open_files_limit(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) < 0 || limit.rlim_cur == RLIM_INFINITY) return -1;
    return (long)limit.rlim_cur;
}
/// Bytes waiting to be read from a descriptor (FIONREAD); -1 with errno on error.
static inline int clinux_readable_bytes(int fd) { int count = 0; return ioctl(fd, FIONREAD, &count) < 0 ? -1 : count; }
/// The terminal's size on `fd` (TIOCGWINSZ) in rows and columns; -1 with errno when `fd` is not a terminal.
static inline int clinux_window_size(int fd, unsigned short *rows, unsigned short *columns) {
    struct winsize size;
    if (ioctl(fd, TIOCGWINSZ, &size) < 0) return -1;
    *rows = size.ws_row;
    *columns = size.ws_col;
    return 0;
}

static inline int clinux_fcntl_setfl(int fd, int flags) { return fcntl(fd, F_SETFL, flags); }
static inline int clinux_fcntl_getfl(int fd) { return fcntl(fd, F_GETFL); }

static inline ssize_t clinux_send_nosignal(int fd, const void *buf, size_t len) {
    return send(fd, buf, len, MSG_NOSIGNAL);
}

/// Blocks SIGINT, SIGTERM, SIGHUP (a closed terminal) and SIGPIPE in the calling thread (and the threads it starts
/// later).
static inline int clinux_block_signals(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGPIPE);
    return pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/// Waits for SIGINT, SIGTERM or SIGHUP (blocked beforehand with `clinux_block_signals`); returns the signal number.
static inline int clinux_wait_termination_signal(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    int sig = 0;
    if (sigwait(&set, &sig) != 0) return -1;
    return sig;
}

static inline void clinux_ignore_sigpipe(void) { signal(SIGPIPE, SIG_IGN); }

/// Namespaces and TUN for `linkcond exec` (defined in shims.c, which needs _GNU_SOURCE for unshare and setns).
int clinux_unshare(int flags);
int clinux_setns(int fd, int nstype);
/// The CLONE_NEW* flags Swift cannot import from <sched.h> without _GNU_SOURCE.
int clinux_clone_newuser(void);
int clinux_clone_newnet(void);
int clinux_clone_newns(void);
int clinux_clone_newpid(void);
/// Opens /dev/net/tun and attaches it to a new TUN interface `name` (IFF_TUN | IFF_NO_PI); -1 with errno.
int clinux_tun_open(const char *name);
/// Makes every mount private, then bind-mounts a file holding `text` over `target` (the file is unlinked at
/// once: the mount keeps it alive while the mount namespace lives).
int clinux_bind_text_over(const char *text, const char *target);
/// Sends `count` descriptors (at most 8) and `length` bytes of `message` in one SCM_RIGHTS message.
ssize_t clinux_send_descriptors(int socket, const int *fds, int count, const void *message, size_t length);
/// Receives a message and up to `max` descriptors (made close-on-exec); `*count` says how many came.
ssize_t clinux_receive_descriptors(int socket, int *fds, int max, int *count, void *message, size_t length);
/// The destination a connection had before nftables redirected it (SO_ORIGINAL_DST, IP6T_SO_ORIGINAL_DST).
int clinux_original_destination(int fd, int family, struct sockaddr_storage *addr, socklen_t *len);
/// posix_spawn of `path` with `argv`, inheriting the caller's descriptors that are not close-on-exec and an
/// empty signal mask; returns the pid or -1 with errno.
int clinux_spawn(const char *path, char *const argv[]);
/// `clinux_spawn` whose standard input is a new pipe's read end and whose standard output and error are another's
/// write end: `*input` gets the first pipe's write end and `*output` the second's read end (both close-on-exec).
int clinux_spawn_piped(const char *path, char *const argv[], int *input, int *output);
/// Reads up to `length` bytes from `fd` once it is readable, waiting at most `timeout_ms`: the count (0 at end of
/// file), -1 with errno, or -2 when nothing came in time.
ssize_t clinux_read_within(int fd, void *buffer, size_t length, int timeout_ms);
/// execvp with an empty signal mask; returns only on failure (-1 with errno).
int clinux_exec(const char *file, char *const argv[]);
/// waitpid(pid, status, WNOHANG when `nohang`); the exit status, 128+signal, or -1 if not yet exited (nohang).
int clinux_wait_child(int pid, int nohang);
/// Blocks SIGCHLD too, so the waiting thread hears of the child with sigwait.
int clinux_block_child_signal(void);
/// Waits for SIGINT, SIGTERM, SIGHUP or SIGCHLD; returns the signal number, and whether the kernel sent it (a terminal's
/// ^C, which the whole foreground process group receives) in `*from_terminal`.
int clinux_wait_signal_or_child(int *from_terminal);
/// Has the kernel SIGKILL the calling process when its parent thread ends (PR_SET_PDEATHSIG; kept across exec).
int clinux_die_with_parent(void);
/// fork(2): 0 in the child, the child's pid in the parent, -1 with errno.
int clinux_fork(void);
/// `clinux_die_with_parent`, for a child forked by a parent that holds the write end of the pipe whose read end is
/// `lifeline` (the child's copy of the write end closed): fails with ESRCH when the parent already ended, which the
/// parent-death signal, set only now, would never report.
int clinux_die_with_parent_holding(int lifeline);
/// Mounts a new proc file system over /proc, showing the caller's PID namespace, after making every mount of the
/// caller's mount namespace private so that the mount stays in it.
int clinux_mount_proc(void);
/// waitpid(-1, WNOHANG): the pid of a child that ended (its status in `*status`: the exit status or 128+signal),
/// 0 when none has, -1 with errno (ECHILD: no child left).
int clinux_reap_any_child(int *status);
/// The uid owning the TCP socket in this network namespace whose local end is `local` (`local_port`) and whose
/// remote end is `remote` (`remote_port`), asked of the kernel's sock_diag for that one socket (no table is read).
/// Addresses are 4 bytes (`family` AF_INET) or 16 (AF_INET6), ports in host order. 0 with `*uid` set, or -errno
/// (-ENOENT: no such socket).
int clinux_tcp_socket_owner(int family, const uint8_t *local, uint16_t local_port, const uint8_t *remote,
                            uint16_t remote_port, uint32_t *uid);
static inline int clinux_kill(int pid, int sig) { return kill(pid, sig); }
static inline int clinux_dup_cloexec(int fd) { return fcntl(fd, F_DUPFD_CLOEXEC, 3); }
static inline int clinux_clear_cloexec(int fd) { return fcntl(fd, F_SETFD, 0); }
static inline int clinux_socketpair_seqpacket(int fds[2]) { return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds); }

#endif
