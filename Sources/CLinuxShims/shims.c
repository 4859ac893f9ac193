#define _GNU_SOURCE
#include <sys/socket.h>
#include "CLinuxShims.h"

int clinux_accept_nonblocking(int fd, struct sockaddr_storage *addr, socklen_t *len) {
    return accept4(fd, (struct sockaddr *)addr, len, SOCK_NONBLOCK | SOCK_CLOEXEC);
}
