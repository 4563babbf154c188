#define _GNU_SOURCE
#include "CSocketShim.h"
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

static uint64_t ns(const struct timespec *ts) { return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec; }

int lyre_socket_enable_timestamps(int fd) {
    int one = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) == 0 ? 0 : -errno;
}

/// CLOCK_REALTIME `real` moved onto CLOCK_MONOTONIC: the two clocks are read back to back (monotonic on
/// both sides of the realtime read, to halve the error if the thread is interrupted between them).
static uint64_t realtime_to_monotonic(uint64_t real) {
    struct timespec m1, r, m2;
    clock_gettime(CLOCK_MONOTONIC, &m1);
    clock_gettime(CLOCK_REALTIME, &r);
    clock_gettime(CLOCK_MONOTONIC, &m2);
    uint64_t mono = ns(&m1) + (ns(&m2) - ns(&m1)) / 2;
    uint64_t realNow = ns(&r);
    uint64_t age = realNow > real ? realNow - real : 0;
    return mono > age ? mono - age : 0;
}

ssize_t lyre_socket_receive(int fd, void *buffer, size_t length, struct sockaddr_storage *from, int timeout_ms,
                            uint64_t *monotonic_ns, int *kernel_stamped) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int ready;
    do { ready = poll(&p, 1, timeout_ms); } while (ready < 0 && errno == EINTR);
    if (ready < 0) return -errno;
    if (ready == 0) return 0;

    struct iovec iov = {.iov_base = buffer, .iov_len = length};
    union { char bytes[CMSG_SPACE(sizeof(struct timespec))]; struct cmsghdr align; } control;
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_name = from;
    message.msg_namelen = sizeof *from;
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control.bytes;
    message.msg_controllen = sizeof control.bytes;
    ssize_t n;
    do { n = recvmsg(fd, &message, MSG_DONTWAIT); } while (n < 0 && errno == EINTR);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;

    *kernel_stamped = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&message); c != NULL; c = CMSG_NXTHDR(&message, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec stamp;
            memcpy(&stamp, CMSG_DATA(c), sizeof stamp);
            *monotonic_ns = realtime_to_monotonic(ns(&stamp));
            *kernel_stamped = 1;
        }
    }
    if (!*kernel_stamped) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        *monotonic_ns = ns(&now);
    }
    return n;
}

int lyre_thread_set_name(const char *name) { return pthread_setname_np(pthread_self(), name); }
