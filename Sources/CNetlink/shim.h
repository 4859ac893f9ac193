#ifndef CNETLINK_SHIM_H
#define CNETLINK_SHIM_H
#include <netlink/netlink.h>
#include <netlink/route/qdisc.h>
#endif
