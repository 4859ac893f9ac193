#define _GNU_SOURCE
#include <sys/socket.h>
#include <string.h>
#include <time.h>
#include <sched.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/inet_diag.h>
#include "CLinuxShims.h"

int clinux_accept_nonblocking(int fd, struct sockaddr_storage *addr, socklen_t *len) {
    return accept4(fd, (struct sockaddr *)addr, len, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int clinux_receive_datagrams(int fd, void *buffers, size_t slot_size, struct sockaddr_storage *addresses,
                             struct clinux_datagram_slot *slots, unsigned int count) {
    enum { most = 64, control_size = CMSG_SPACE(sizeof(uint32_t)) + CMSG_SPACE(sizeof(struct timespec)) };
    struct mmsghdr messages[most];
    struct iovec vectors[most];
    union { char bytes[control_size]; struct cmsghdr align; } controls[most];
    int64_t offset = 0;
    int has_offset = 0;
    if (count > most) count = most;
    memset(messages, 0, sizeof(struct mmsghdr) * count);
    for (unsigned int i = 0; i < count; i++) {
        vectors[i].iov_base = (char *)buffers + i * slot_size;
        vectors[i].iov_len = slot_size;
        messages[i].msg_hdr.msg_iov = &vectors[i];
        messages[i].msg_hdr.msg_iovlen = 1;
        messages[i].msg_hdr.msg_name = &addresses[i];
        messages[i].msg_hdr.msg_namelen = sizeof(struct sockaddr_storage);
        messages[i].msg_hdr.msg_control = controls[i].bytes;
        messages[i].msg_hdr.msg_controllen = control_size;
    }
    int received = recvmmsg(fd, messages, count, MSG_DONTWAIT, NULL);
    for (int i = 0; i < received; i++) {
        struct msghdr *header = &messages[i].msg_hdr;
        slots[i].length = messages[i].msg_len;
        slots[i].address_length = header->msg_namelen;
        slots[i].has_drop_count = 0;
        slots[i].drop_count = 0;
        slots[i].arrival_ns = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(header); c != NULL; c = CMSG_NXTHDR(header, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
                memcpy(&slots[i].drop_count, CMSG_DATA(c), sizeof(uint32_t));
                slots[i].has_drop_count = 1;
            } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
                struct timespec stamp;
                memcpy(&stamp, CMSG_DATA(c), sizeof stamp);
                if (!has_offset) {
                    struct timespec real, monotonic;
                    clock_gettime(CLOCK_REALTIME, &real);
                    clock_gettime(CLOCK_MONOTONIC, &monotonic);
                    offset = ((int64_t)monotonic.tv_sec - real.tv_sec) * 1000000000LL + (monotonic.tv_nsec - real.tv_nsec);
                    has_offset = 1;
                }
                slots[i].arrival_ns = (int64_t)stamp.tv_sec * 1000000000LL + stamp.tv_nsec + offset;
            }
        }
    }
    return received;
}

#include <netinet/in.h>
#include <netinet/udp.h>

/// Whether datagram `next` can join the run that starts at `first` and ends at `last` as one GSO message.
static int clinux_joins_run(const struct sockaddr_storage *addresses, const struct clinux_outgoing_datagram *datagrams,
                            unsigned int first, unsigned int last, unsigned int next) {
    enum { most_bytes = 65000, most_segments = 64 };
    const struct clinux_outgoing_datagram *head = &datagrams[first], *tail = &datagrams[last], *candidate = &datagrams[next];
    if (head->length == 0 || candidate->length == 0 || candidate->length > head->length) return 0;
    if (tail->length != head->length) return 0;
    if (candidate->offset != tail->offset + tail->length) return 0;
    if (candidate->offset + candidate->length - head->offset > most_bytes || next - first + 1 > most_segments) return 0;
    if (candidate->address_length != head->address_length) return 0;
    return head->address_length == 0 || memcmp(&addresses[first], &addresses[next], head->address_length) == 0;
}

int clinux_send_datagrams(int fd, const void *payload, const struct sockaddr_storage *addresses,
                          const struct clinux_outgoing_datagram *datagrams, unsigned int count, int segment,
                          unsigned int *first_message) {
    enum { most = 64, control_size = CMSG_SPACE(sizeof(uint16_t)) };
    struct mmsghdr messages[most];
    struct iovec vectors[most];
    unsigned int runs[most];
    union { char bytes[control_size]; struct cmsghdr align; } controls[most];
    if (count > most) count = most;
    unsigned int used = 0;
    for (unsigned int i = 0; i < count; used++) {
        unsigned int last = i;
        while (segment && last + 1 < count && clinux_joins_run(addresses, datagrams, i, last, last + 1)) last++;
        struct msghdr *header = &messages[used].msg_hdr;
        memset(&messages[used], 0, sizeof messages[used]);
        vectors[used].iov_base = (char *)payload + datagrams[i].offset;
        vectors[used].iov_len = datagrams[last].offset + datagrams[last].length - datagrams[i].offset;
        header->msg_iov = &vectors[used];
        header->msg_iovlen = 1;
        if (datagrams[i].address_length > 0) {
            header->msg_name = (void *)&addresses[i];
            header->msg_namelen = datagrams[i].address_length;
        }
        if (last > i) {
            header->msg_control = controls[used].bytes;
            header->msg_controllen = control_size;
            struct cmsghdr *c = CMSG_FIRSTHDR(header);
            c->cmsg_level = SOL_UDP;
            c->cmsg_type = UDP_SEGMENT;
            c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
            uint16_t size = (uint16_t)datagrams[i].length;
            memcpy(CMSG_DATA(c), &size, sizeof size);
        }
        runs[used] = last - i + 1;
        i = last + 1;
    }
    *first_message = used > 0 ? runs[0] : 0;
    int sent = sendmmsg(fd, messages, used, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent <= 0) return sent;
    int datagrams_sent = 0;
    for (int m = 0; m < sent; m++) datagrams_sent += (int)runs[m];
    return datagrams_sent;
}

#include <sched.h>
#include <stdlib.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <poll.h>
#include <net/if.h>
#include <linux/if_tun.h>


int clinux_unshare(int flags) { return unshare(flags); }
int clinux_setns(int fd, int nstype) { return setns(fd, nstype); }
int clinux_clone_newuser(void) { return CLONE_NEWUSER; }
int clinux_clone_newnet(void) { return CLONE_NEWNET; }
int clinux_clone_newns(void) { return CLONE_NEWNS; }
int clinux_clone_newpid(void) { return CLONE_NEWPID; }

int clinux_tun_open(const char *name) {
    int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    if (fd < 0) return -1;
    struct ifreq request;
    memset(&request, 0, sizeof request);
    request.ifr_flags = IFF_TUN | IFF_NO_PI;
    strncpy(request.ifr_name, name, IFNAMSIZ - 1);
    if (ioctl(fd, TUNSETIFF, &request) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int clinux_bind_text_over(const char *text, const char *target) {
    char path[] = "/tmp/linkcond-exec-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    size_t length = strlen(text);
    int failed = write(fd, text, length) != (ssize_t)length;
    close(fd);
    if (!failed) failed = mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0;
    if (!failed) failed = mount(path, target, NULL, MS_BIND, NULL) < 0;
    int saved = errno;
    unlink(path);
    errno = saved;
    return failed ? -1 : 0;
}

ssize_t clinux_send_descriptors(int socket, const int *fds, int count, const void *message, size_t length) {
    if (count > 8) count = 8;
    union { char bytes[CMSG_SPACE(8 * sizeof(int))]; struct cmsghdr align; } control;
    struct iovec vector = { (void *)message, length };
    struct msghdr header;
    memset(&header, 0, sizeof header);
    header.msg_iov = &vector;
    header.msg_iovlen = 1;
    if (count > 0) {
        header.msg_control = control.bytes;
        header.msg_controllen = CMSG_SPACE(count * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&header);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(count * sizeof(int));
        memcpy(CMSG_DATA(c), fds, count * sizeof(int));
    }
    return sendmsg(socket, &header, MSG_NOSIGNAL);
}

ssize_t clinux_receive_descriptors(int socket, int *fds, int max, int *count, void *message, size_t length) {
    union { char bytes[CMSG_SPACE(8 * sizeof(int))]; struct cmsghdr align; } control;
    struct iovec vector = { message, length };
    struct msghdr header;
    memset(&header, 0, sizeof header);
    header.msg_iov = &vector;
    header.msg_iovlen = 1;
    header.msg_control = control.bytes;
    header.msg_controllen = sizeof control.bytes;
    *count = 0;
    ssize_t received = recvmsg(socket, &header, MSG_CMSG_CLOEXEC);
    if (received < 0) return -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&header); c != NULL; c = CMSG_NXTHDR(&header, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        int n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            if (*count < max) fds[(*count)++] = fd; else close(fd);
        }
    }
    return received;
}

int clinux_original_destination(int fd, int family, struct sockaddr_storage *addr, socklen_t *len) {
    *len = sizeof(struct sockaddr_storage);
    if (family == AF_INET6) return getsockopt(fd, SOL_IPV6, 80 /* IP6T_SO_ORIGINAL_DST */, addr, len);
    return getsockopt(fd, SOL_IP, 80 /* SO_ORIGINAL_DST */, addr, len);
}

extern char **environ;

/* Spawn attributes for a child that starts with no signal blocked and SIGPIPE at its default, whatever the
   calling thread blocks or ignores. */
static void spawn_attributes(posix_spawnattr_t *attributes) {
    posix_spawnattr_init(attributes);
    sigset_t empty;
    sigemptyset(&empty);
    posix_spawnattr_setsigmask(attributes, &empty);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_setsigdefault(attributes, &defaults);
    posix_spawnattr_setflags(attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
}

int clinux_spawn(const char *path, char *const argv[]) {
    posix_spawnattr_t attributes;
    spawn_attributes(&attributes);
    pid_t pid = -1;
    int failed = posix_spawn(&pid, path, NULL, &attributes, argv, environ);
    posix_spawnattr_destroy(&attributes);
    if (failed != 0) { errno = failed; return -1; }
    return pid;
}

int clinux_spawn_piped(const char *path, char *const argv[], int *input, int *output) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0) return -1;
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, out[1], 2);
    posix_spawnattr_t attributes;
    spawn_attributes(&attributes);
    pid_t pid = -1;
    int failed = posix_spawn(&pid, path, &actions, &attributes, argv, environ);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    if (failed != 0) {
        close(in[1]);
        close(out[0]);
        errno = failed;
        return -1;
    }
    *input = in[1];
    *output = out[0];
    return pid;
}

ssize_t clinux_read_within(int fd, void *buffer, size_t length, int timeout_ms) {
    struct pollfd waiting = {.fd = fd, .events = POLLIN};
    int ready;
    do { ready = poll(&waiting, 1, timeout_ms); } while (ready < 0 && errno == EINTR);
    if (ready < 0) return -1;
    if (ready == 0) return -2;
    ssize_t count;
    do { count = read(fd, buffer, length); } while (count < 0 && errno == EINTR);
    return count;
}

int clinux_exec(const char *file, char *const argv[]) {
    sigset_t empty;
    sigemptyset(&empty);
    sigprocmask(SIG_SETMASK, &empty, NULL);
    signal(SIGPIPE, SIG_DFL);
    return execvp(file, argv);
}

int clinux_wait_child(int pid, int nohang) {
    int status = 0;
    int result;
    do { result = waitpid(pid, &status, nohang ? WNOHANG : 0); } while (result < 0 && errno == EINTR);
    if (result <= 0) return -1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -1;
}

int clinux_block_child_signal(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    return pthread_sigmask(SIG_BLOCK, &set, NULL);
}

int clinux_wait_signal_or_child(int *from_terminal) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGCHLD);
    siginfo_t info;
    int sig;
    do { sig = sigwaitinfo(&set, &info); } while (sig < 0 && errno == EINTR);
    *from_terminal = sig > 0 && info.si_code == SI_KERNEL;
    return sig;
}

int clinux_die_with_parent(void) { return prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0); }

int clinux_fork(void) { return fork(); }

int clinux_die_with_parent_holding(int lifeline) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) return -1;
    struct pollfd watch = { .fd = lifeline, .events = POLLIN, .revents = 0 };
    int ready;
    do { ready = poll(&watch, 1, 0); } while (ready < 0 && errno == EINTR);
    if (ready < 0) return -1;
    if (ready > 0) { errno = ESRCH; return -1; }
    return 0;
}

int clinux_mount_proc(void) {
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) return -1;
    return mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
}

int clinux_reap_any_child(int *status) {
    int raw = 0;
    int pid;
    do { pid = waitpid(-1, &raw, WNOHANG); } while (pid < 0 && errno == EINTR);
    if (pid <= 0) return pid;
    *status = WIFEXITED(raw) ? WEXITSTATUS(raw) : WIFSIGNALED(raw) ? 128 + WTERMSIG(raw) : -1;
    return pid;
}

ssize_t clinux_recv_stamped(int fd, void *buffer, size_t length, int64_t *arrival_ns) {
    union { char bytes[CMSG_SPACE(sizeof(struct timespec))]; struct cmsghdr align; } control;
    struct iovec vector = { .iov_base = buffer, .iov_len = length };
    struct msghdr header = { .msg_iov = &vector, .msg_iovlen = 1, .msg_control = control.bytes,
                             .msg_controllen = sizeof control.bytes };
    *arrival_ns = 0;
    ssize_t count = recvmsg(fd, &header, MSG_DONTWAIT);
    if (count <= 0) return count;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&header); c != NULL; c = CMSG_NXTHDR(&header, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec stamp, real, monotonic;
            memcpy(&stamp, CMSG_DATA(c), sizeof stamp);
            clock_gettime(CLOCK_REALTIME, &real);
            clock_gettime(CLOCK_MONOTONIC, &monotonic);
            int64_t age = (int64_t)(real.tv_sec - stamp.tv_sec) * 1000000000LL + (real.tv_nsec - stamp.tv_nsec);
            *arrival_ns = (int64_t)monotonic.tv_sec * 1000000000LL + monotonic.tv_nsec - age;
        }
    }
    return count;
}

int clinux_gettid(void) {
    return gettid();
}

#include <sys/syscall.h>
#include <linux/kcmp.h>

int clinux_same_open_file(int a, int b) {
    pid_t pid = getpid();
    long order = syscall(SYS_kcmp, pid, pid, KCMP_FILE, a, b);
    return order < 0 ? -1 : order == 0;
}

int clinux_pipe_nonblocking(int fds[2]) {
    return pipe2(fds, O_NONBLOCK | O_CLOEXEC);
}

ssize_t clinux_splice_nonblocking(int from, int to, size_t length) {
    return splice(from, NULL, to, NULL, length, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
}

int clinux_pipe_set_size(int fd, int size) {
    return fcntl(fd, F_SETPIPE_SZ, size);
}

int clinux_set_realtime_fifo(int priority, int passed_on) {
    struct sched_param parameters = { .sched_priority = priority };
    return sched_setscheduler(0, SCHED_FIFO | (passed_on ? 0 : SCHED_RESET_ON_FORK), &parameters);
}

int clinux_tcp_socket_owner(int family, const uint8_t *local, uint16_t local_port, const uint8_t *remote,
                            uint16_t remote_port, uint32_t *uid) {
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0) return -errno;
    struct {
        struct nlmsghdr header;
        struct inet_diag_req_v2 request;
    } message;
    memset(&message, 0, sizeof message);
    message.header.nlmsg_len = sizeof message;
    message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    message.header.nlmsg_flags = NLM_F_REQUEST;
    message.request.sdiag_family = (uint8_t)family;
    message.request.sdiag_protocol = IPPROTO_TCP;
    message.request.idiag_states = ~0U;
    size_t length = family == AF_INET6 ? 16 : 4;
    memcpy(message.request.id.idiag_src, local, length);
    memcpy(message.request.id.idiag_dst, remote, length);
    message.request.id.idiag_sport = htons(local_port);
    message.request.id.idiag_dport = htons(remote_port);
    message.request.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
    message.request.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(fd, &message, sizeof message, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    long answer[1024];
    ssize_t got;
    do { got = recv(fd, answer, sizeof answer, 0); } while (got < 0 && errno == EINTR);
    int error = got < 0 ? errno : 0;
    close(fd);
    if (got < 0) return -error;
    struct nlmsghdr *reply = (struct nlmsghdr *)answer;
    if (!NLMSG_OK(reply, (size_t)got)) return -EPROTO;
    if (reply->nlmsg_type == NLMSG_ERROR) {
        struct nlmsgerr *failure = NLMSG_DATA(reply);
        return failure->error < 0 ? failure->error : -EPROTO;
    }
    if (reply->nlmsg_type != SOCK_DIAG_BY_FAMILY || reply->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
        return -EPROTO;
    struct inet_diag_msg *socket_info = NLMSG_DATA(reply);
    *uid = socket_info->idiag_uid;
    return 0;
}
