/* A hostile probe in C: sockets made through io_uring (IORING_OP_SOCKET), which a
 * seccomp rule on socket() never sees, and a user-mode userfaultfd; raw system calls,
 * no liburing. Prints {"answer": "<what it got, as JSON>"} for a per-question agent. */
#include <errno.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *name_of(int error) {
    switch (error) {
    case EPERM: return "EPERM";
    case ENOSYS: return "ENOSYS";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
    case EINVAL: return "EINVAL";
    case EACCES: return "EACCES";
    default: return "other";
    }
}

/* "created", or the error of the ring's setup or of the operation */
static void uring_socket(int family, int type, int protocol, char *out, size_t size) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    int ring = (int)syscall(__NR_io_uring_setup, 4, &p);
    if (ring < 0) {
        snprintf(out, size, "setup %s", name_of(errno));
        return;
    }
    size_t sq_size = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_size = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    char *sq = mmap(0, sq_size, PROT_READ | PROT_WRITE, MAP_SHARED, ring, IORING_OFF_SQ_RING);
    char *cq = mmap(0, cq_size, PROT_READ | PROT_WRITE, MAP_SHARED, ring, IORING_OFF_CQ_RING);
    struct io_uring_sqe *sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe),
                                     PROT_READ | PROT_WRITE, MAP_SHARED, ring, IORING_OFF_SQES);
    if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) {
        snprintf(out, size, "mmap %s", name_of(errno));
        close(ring);
        return;
    }
    memset(&sqes[0], 0, sizeof sqes[0]);
    sqes[0].opcode = IORING_OP_SOCKET;
    sqes[0].fd = family;
    sqes[0].off = type;
    sqes[0].len = protocol;
    unsigned *tail = (unsigned *)(sq + p.sq_off.tail), mask = *(unsigned *)(sq + p.sq_off.ring_mask);
    ((unsigned *)(sq + p.sq_off.array))[*tail & mask] = 0;
    __atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
    if (syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0) {
        snprintf(out, size, "enter %s", name_of(errno));
        close(ring);
        return;
    }
    unsigned head = *(unsigned *)(cq + p.cq_off.head), cmask = *(unsigned *)(cq + p.cq_off.ring_mask);
    struct io_uring_cqe *cqe = (struct io_uring_cqe *)(cq + p.cq_off.cqes) + (head & cmask);
    if (cqe->res >= 0) {
        close(cqe->res);
        snprintf(out, size, "created");
    } else {
        snprintf(out, size, "%s", name_of(-cqe->res));
    }
    close(ring);
}

int main(void) {
    static const struct { const char *name; int family, type, protocol; } tried[] = {
        {"AF_VSOCK", 40, 1, 0},
        {"NETLINK_AUDIT", 16, 3, 9},
        {"NETLINK_KOBJECT_UEVENT", 16, 3, 15},
        {"NETLINK_GENERIC", 16, 3, 16},
        {"NETLINK_SOCK_DIAG", 16, 3, 4},
    };
    char report[1024] = "{", got[64];
    for (size_t i = 0; i < sizeof tried / sizeof tried[0]; i++) {
        uring_socket(tried[i].family, tried[i].type, tried[i].protocol, got, sizeof got);
        snprintf(report + strlen(report), sizeof report - strlen(report), "\\\"%s\\\": \\\"%s\\\", ",
                 tried[i].name, got);
    }
    long fd = syscall(__NR_userfaultfd, 1 /* UFFD_USER_MODE_ONLY */);
    snprintf(report + strlen(report), sizeof report - strlen(report), "\\\"userfaultfd\\\": \\\"%s\\\"}",
             fd >= 0 ? "created" : name_of(errno));
    printf("{\"answer\": \"%s\"}\n", report);
    return 0;
}
