// Why this exists: a datagram's kernel receive time arrives as an SCM_TIMESTAMPNS control message, read
// with the CMSG_* macros, and SO_TIMESTAMPNS itself is a macro whose value depends on the size of time_t.
// Swift can use neither. Nor can it see pthread_setname_np, which glibc declares only under _GNU_SOURCE.
// These fixed-signature helpers do it in C; names carry the lyre_ prefix.
#ifndef LYRE_CSOCKET_SHIM_H
#define LYRE_CSOCKET_SHIM_H
#include <stdint.h>
#include <sys/types.h>
#include <netinet/in.h>
#include <sys/socket.h>

/// Asks the kernel to stamp every datagram received on `fd` (SO_TIMESTAMPNS). 0, or -errno.
int lyre_socket_enable_timestamps(int fd);

/// Waits at most `timeout_ms` for one datagram on `fd` and reads it into `buffer`.
/// Returns its length (0 on timeout), or -errno. `from` gets the sender's IPv4 address; `monotonic_ns`
/// the time the kernel received it, on CLOCK_MONOTONIC, or the time it was read when the kernel gave no
/// stamp; `kernel_stamped` says which.
ssize_t lyre_socket_receive(int fd, void *buffer, size_t length, struct sockaddr_storage *from, int timeout_ms,
                            uint64_t *monotonic_ns, int *kernel_stamped);
/// Names the calling thread (at most 15 bytes) for top -H and debuggers. 0, or an errno.
int lyre_thread_set_name(const char *name);
#endif
