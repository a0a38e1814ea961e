/* `nerve ros2 --services GLOB`: the services of rmw_nerve's nodes offered to
 * DDS clients, and --services-from-ros GLOB the other way (ros2_services.cpp, on Fast DDS). The hooks nerve-ros2-dds
 * (ros2_dds.c) calls from its main thread. */
#ifndef NERVE_TOOLS_ROS2_SERVICES_H
#define NERVE_TOOLS_ROS2_SERVICES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The line printer of nerve-ros2-dds (escapes what peers named). */
typedef void (*ros2_srv_say_fn)(const char *fmt, ...);

/* Joins DDS domain `domain` with a Fast DDS participant of its own and
 * follows the graph of rmw_nerve's domain `domain` (ros2-graph-dN): every
 * service whose name matches one of `globs` (fnmatch, on the ROS name:
 * "/talker/" then a star, say) gets a DDS request reader and reply writer.
 * Every service served on DDS whose name matches one of `from` is served
 * to rmw_nerve's clients (--services-from-ros); `imports` are the bridge's
 * --from-ros, `nimports` pairs of ROS topic and channel (an action's
 * feedback and status among them are announced with its services). 0, or
 * -1 with the reason said. Thread: main only. */
int ros2_srv_start(uint32_t domain, const char *const *globs, size_t nglobs,
                   const char *const *from, size_t nfrom,
                   const char *const *imports, size_t nimports,
                   ros2_srv_say_fn say);

/* Reads the graph's news and offers or withdraws services to match it.
 * Thread: main only. Blocking: no (puts wait at most 100 ms). */
void ros2_srv_poll(void);

/* Withdraws every service, prints each one's summary, leaves the domain.
 * Thread: main only. */
void ros2_srv_stop(void);

/* One endpoint of a node of rmw_nerve's graph: the node's namespace and
 * name, the endpoint's kind ('P' publisher, 'S' subscription, 'V' service,
 * 'C' client), its ROS name and the channel rmw_nerve gives that name. */
typedef void (*ros2_node_fn)(const char *ns, const char *node, char kind,
                             const char *ros_name, const char *chan, void *arg);

/* Reads the news of rmw_nerve's graph of domain `domain` (ros2-graph-dN,
 * its own user's and root's channels, as --services does) and calls fn
 * once per endpoint of every node of a live process. Works with or
 * without --services. Thread: main only. Blocking: no. */
void ros2_rmw_graph_walk(uint32_t domain, ros2_node_fn fn, void *arg);

/* One bridged service's Fast DDS endpoints: kind 'V' for a service offered
 * to DDS clients (a request reader, a reply writer: what a server has),
 * 'C' for one served from DDS to rmw_nerve clients (a reply reader, a
 * request writer: what a client has); the 16-byte GUIDs. */
typedef void (*ros2_srv_ep_fn)(char kind, const char *service,
                               const unsigned char reader[16],
                               const unsigned char writer[16], void *arg);

/* Calls fn for every service bridged now. Thread: main only. */
void ros2_srv_endpoints(ros2_srv_ep_fn fn, void *arg);

#ifdef __cplusplus
}
#endif

#endif
