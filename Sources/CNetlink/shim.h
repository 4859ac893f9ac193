#ifndef CNETLINK_SHIM_H
#define CNETLINK_SHIM_H

#include <fcntl.h>
#include <unistd.h>
#include <stdint.h>
#include <linux/if_ether.h>
#include <linux/pkt_sched.h>
#include <linux/pkt_cls.h>
#include <linux/tc_act/tc_mirred.h>
#include <netlink/netlink.h>
#include <netlink/errno.h>
#include <netlink/socket.h>
#include <netlink/cache.h>
#include <netlink/route/link.h>
#include <netlink/route/tc.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/class.h>
#include <netlink/route/classifier.h>
#include <netlink/route/action.h>
#include <netlink/route/qdisc/netem.h>
#include <netlink/route/qdisc/htb.h>
#include <netlink/route/qdisc/fifo.h>
#include <netlink/route/cls/u32.h>
#include <netlink/route/act/mirred.h>

/* setns(2) is only declared with _GNU_SOURCE, which would change what the Glibc module sees. */
extern int setns(int fd, int nstype);

static inline struct rtnl_tc *cnetlink_qdisc_tc(struct rtnl_qdisc *qdisc) { return TC_CAST(qdisc); }
static inline struct rtnl_tc *cnetlink_class_tc(struct rtnl_class *cls) { return TC_CAST(cls); }
static inline struct rtnl_tc *cnetlink_cls_tc(struct rtnl_cls *cls) { return TC_CAST(cls); }
static inline struct rtnl_tc *cnetlink_act_tc(struct rtnl_act *act) { return TC_CAST(act); }

static inline uint32_t cnetlink_tc_handle(uint32_t major, uint32_t minor) {
    return TC_H_MAKE(major << 16, minor);
}
static inline uint32_t cnetlink_tc_root(void) { return TC_H_ROOT; }
static inline uint32_t cnetlink_tc_ingress(void) { return TC_H_INGRESS; }
static inline uint32_t cnetlink_tc_clsact_ingress(void) { return TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS); }

static inline int cnetlink_flags_create_replace(void) { return NLM_F_CREATE | NLM_F_REPLACE; }
static inline int cnetlink_flags_create_exclusive(void) { return NLM_F_CREATE | NLM_F_EXCL; }

/* Enters the network namespace behind `fd` on the calling thread only; returns 0 or -1 with errno. */
static inline int cnetlink_enter_network_namespace(int fd) { return setns(fd, 0x40000000 /* CLONE_NEWNET */); }

static inline int cnetlink_open_readonly(const char *path) { return open(path, O_RDONLY | O_CLOEXEC); }

#endif
