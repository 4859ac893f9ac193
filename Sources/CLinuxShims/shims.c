#define _GNU_SOURCE
#include <sys/socket.h>
#include <string.h>
#include "CLinuxShims.h"

int clinux_accept_nonblocking(int fd, struct sockaddr_storage *addr, socklen_t *len) {
    return accept4(fd, (struct sockaddr *)addr, len, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int clinux_receive_datagrams(int fd, void *buffers, size_t slot_size, struct sockaddr_storage *addresses,
                             struct clinux_datagram_slot *slots, unsigned int count) {
    enum { most = 64, control_size = CMSG_SPACE(sizeof(uint32_t)) };
    struct mmsghdr messages[most];
    struct iovec vectors[most];
    union { char bytes[control_size]; struct cmsghdr align; } controls[most];
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
        for (struct cmsghdr *c = CMSG_FIRSTHDR(header); c != NULL; c = CMSG_NXTHDR(header, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
                memcpy(&slots[i].drop_count, CMSG_DATA(c), sizeof(uint32_t));
                slots[i].has_drop_count = 1;
            }
        }
    }
    return received;
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
