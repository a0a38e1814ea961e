// Graph queries: answered from the process's view of the graph channel
// (graph.cpp), without asking any other process.

#include "rmw_nerve.hpp"

#include <cstring>
#include <set>

#include <rcutils/strdup.h>
#include <rmw/get_node_info_and_types.h>
#include <rmw/get_service_names_and_types.h>
#include <rmw/get_topic_endpoint_info.h>
#include <rmw/get_topic_names_and_types.h>
#include <rmw/names_and_types.h>
#include <rmw/topic_endpoint_info_array.h>

using namespace rmw_nerve;

namespace {

Graph::Snapshot snap_of(const rmw_node_t *node)
{
    return static_cast<Node *>(node->data)->ctx->graph->snapshot();
}

rmw_ret_t check_node(const rmw_node_t *node)
{
    if (!node || !node->data)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: node is NULL");
    if (strcmp(node->implementation_identifier ?: "", kIdentifier) != 0)
        return fail(RMW_RET_INCORRECT_RMW_IMPLEMENTATION,
                    "rmw_nerve: node belongs to %s",
                    node->implementation_identifier);
    return RMW_RET_OK;
}

// Names and types of the endpoints for which keep(e) holds.
template <class F>
rmw_ret_t names_types(const Graph::Snapshot &s, F keep,
                      rcutils_allocator_t *alloc, rmw_names_and_types_t *out)
{
    if (!alloc || !out)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
    if (rmw_names_and_types_check_zero(out) != RMW_RET_OK)
        return RMW_RET_INVALID_ARGUMENT;
    std::map<std::string, std::set<std::string>> m;
    for (const auto &e : s.eps)
        if (keep(e))
            m[e.name].insert(e.type);
    if (m.empty())
        return RMW_RET_OK;
    rmw_ret_t r = rmw_names_and_types_init(out, m.size(), alloc);
    if (r != RMW_RET_OK)
        return r;
    size_t i = 0;
    for (const auto &kv : m) {
        out->names.data[i] = rcutils_strdup(kv.first.c_str(), *alloc);
        if (rcutils_string_array_init(&out->types[i], kv.second.size(),
                                      alloc) != RCUTILS_RET_OK) {
            ignore(rmw_names_and_types_fini(out));
            return fail(RMW_RET_BAD_ALLOC, "rmw_nerve: out of memory");
        }
        size_t j = 0;
        for (const auto &t : kv.second)
            out->types[i].data[j++] = rcutils_strdup(t.c_str(), *alloc);
        i++;
    }
    return RMW_RET_OK;
}

bool node_exists(const Graph::Snapshot &s, const char *name, const char *ns)
{
    for (const auto &n : s.nodes)
        if (n.name == name && n.ns == ns)
            return true;
    return false;
}

rmw_ret_t by_node(const rmw_node_t *node, rcutils_allocator_t *alloc,
                  const char *name, const char *ns, Kind kind,
                  rmw_names_and_types_t *out)
{
    rmw_ret_t r = check_node(node);
    if (r != RMW_RET_OK)
        return r;
    if (!name || !ns)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL node name");
    auto s = snap_of(node);
    if (!node_exists(s, name, ns))
        return fail(RMW_RET_NODE_NAME_NON_EXISTENT,
                    "rmw_nerve: no node '%s' in namespace '%s'", name, ns);
    return names_types(
        s,
        [&](const Endpoint &e) {
            return e.kind == kind && e.node_name == name && e.node_ns == ns;
        },
        alloc, out);
}

rmw_ret_t count(const rmw_node_t *node, const char *name, Kind kind, size_t *n)
{
    rmw_ret_t r = check_node(node);
    if (r != RMW_RET_OK)
        return r;
    if (!name || !n)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
    *n = snap_of(node).count(kind, name);
    return RMW_RET_OK;
}

rmw_ret_t endpoints(const rmw_node_t *node, rcutils_allocator_t *alloc,
                    const char *topic, Kind kind,
                    rmw_topic_endpoint_info_array_t *out)
{
    rmw_ret_t r = check_node(node);
    if (r != RMW_RET_OK)
        return r;
    if (!alloc || !topic || !out)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
    if (rmw_topic_endpoint_info_array_check_zero(out) != RMW_RET_OK)
        return RMW_RET_INVALID_ARGUMENT;
    auto s = snap_of(node);
    std::vector<const Endpoint *> v;
    for (const auto &e : s.eps)
        if (e.kind == kind && e.name == topic)
            v.push_back(&e);
    if (v.empty())
        return RMW_RET_OK;
    r = rmw_topic_endpoint_info_array_init_with_size(out, v.size(), alloc);
    if (r != RMW_RET_OK)
        return r;
    for (size_t i = 0; i < v.size(); i++) {
        rmw_topic_endpoint_info_t *ti = &out->info_array[i];
        *ti = rmw_get_zero_initialized_topic_endpoint_info();
        if (rmw_topic_endpoint_info_set_node_name(ti, v[i]->node_name.c_str(),
                                                  alloc) != RMW_RET_OK ||
            rmw_topic_endpoint_info_set_node_namespace(
                ti, v[i]->node_ns.c_str(), alloc) != RMW_RET_OK ||
            rmw_topic_endpoint_info_set_topic_type(ti, v[i]->type.c_str(),
                                                   alloc) != RMW_RET_OK ||
            rmw_topic_endpoint_info_set_endpoint_type(
                ti, kind == Kind::Pub
                        ? RMW_ENDPOINT_PUBLISHER
                        : RMW_ENDPOINT_SUBSCRIPTION) != RMW_RET_OK ||
            rmw_topic_endpoint_info_set_gid(
                ti, v[i]->gid.data, RMW_GID_STORAGE_SIZE) != RMW_RET_OK ||
            rmw_topic_endpoint_info_set_qos_profile(ti, &v[i]->qos) !=
                RMW_RET_OK ||
            rmw_topic_endpoint_info_set_topic_type_hash(ti, &v[i]->hash) !=
                RMW_RET_OK) {
            ignore(rmw_topic_endpoint_info_array_fini(out, alloc));
            return fail(RMW_RET_BAD_ALLOC, "rmw_nerve: out of memory");
        }
    }
    return RMW_RET_OK;
}

rmw_ret_t node_names(const rmw_node_t *node, rcutils_string_array_t *names,
                     rcutils_string_array_t *nss,
                     rcutils_string_array_t *enclaves)
{
    rmw_ret_t r = check_node(node);
    if (r != RMW_RET_OK)
        return r;
    if (!names || !nss)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
    auto s = snap_of(node);
    rcutils_allocator_t a = rcutils_get_default_allocator();
    size_t n = s.nodes.size();
    if (rcutils_string_array_init(names, n, &a) != RCUTILS_RET_OK ||
        rcutils_string_array_init(nss, n, &a) != RCUTILS_RET_OK ||
        (enclaves &&
         rcutils_string_array_init(enclaves, n, &a) != RCUTILS_RET_OK))
        return fail(RMW_RET_BAD_ALLOC, "rmw_nerve: out of memory");
    for (size_t i = 0; i < n; i++) {
        names->data[i] = rcutils_strdup(s.nodes[i].name.c_str(), a);
        nss->data[i] = rcutils_strdup(s.nodes[i].ns.c_str(), a);
        if (enclaves)
            enclaves->data[i] = rcutils_strdup(s.nodes[i].enclave.c_str(), a);
    }
    return RMW_RET_OK;
}

} // namespace

extern "C" {

rmw_ret_t rmw_get_node_names(const rmw_node_t *node,
                             rcutils_string_array_t *names,
                             rcutils_string_array_t *nss)
{
    return node_names(node, names, nss, nullptr);
}

rmw_ret_t rmw_get_node_names_with_enclaves(const rmw_node_t *node,
                                           rcutils_string_array_t *names,
                                           rcutils_string_array_t *nss,
                                           rcutils_string_array_t *enclaves)
{
    if (!enclaves)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: NULL argument");
    return node_names(node, names, nss, enclaves);
}

rmw_ret_t rmw_get_topic_names_and_types(const rmw_node_t *node,
                                        rcutils_allocator_t *alloc,
                                        bool no_demangle,
                                        rmw_names_and_types_t *out)
{
    (void)no_demangle; // names are never mangled
    rmw_ret_t r = check_node(node);
    if (r != RMW_RET_OK)
        return r;
    return names_types(
        snap_of(node),
        [](const Endpoint &e) {
            return e.kind == Kind::Pub || e.kind == Kind::Sub;
        },
        alloc, out);
}

rmw_ret_t rmw_get_service_names_and_types(const rmw_node_t *node,
                                          rcutils_allocator_t *alloc,
                                          rmw_names_and_types_t *out)
{
    rmw_ret_t r = check_node(node);
    if (r != RMW_RET_OK)
        return r;
    return names_types(
        snap_of(node),
        [](const Endpoint &e) {
            return e.kind == Kind::Srv || e.kind == Kind::Cli;
        },
        alloc, out);
}

rmw_ret_t rmw_get_publisher_names_and_types_by_node(
    const rmw_node_t *node, rcutils_allocator_t *alloc, const char *name,
    const char *ns, bool no_demangle, rmw_names_and_types_t *out)
{
    (void)no_demangle;
    return by_node(node, alloc, name, ns, Kind::Pub, out);
}

rmw_ret_t rmw_get_subscriber_names_and_types_by_node(
    const rmw_node_t *node, rcutils_allocator_t *alloc, const char *name,
    const char *ns, bool no_demangle, rmw_names_and_types_t *out)
{
    (void)no_demangle;
    return by_node(node, alloc, name, ns, Kind::Sub, out);
}

rmw_ret_t rmw_get_service_names_and_types_by_node(const rmw_node_t *node,
                                                  rcutils_allocator_t *alloc,
                                                  const char *name,
                                                  const char *ns,
                                                  rmw_names_and_types_t *out)
{
    return by_node(node, alloc, name, ns, Kind::Srv, out);
}

rmw_ret_t rmw_get_client_names_and_types_by_node(const rmw_node_t *node,
                                                 rcutils_allocator_t *alloc,
                                                 const char *name,
                                                 const char *ns,
                                                 rmw_names_and_types_t *out)
{
    return by_node(node, alloc, name, ns, Kind::Cli, out);
}

rmw_ret_t rmw_count_publishers(const rmw_node_t *node, const char *topic,
                               size_t *n)
{
    return count(node, topic, Kind::Pub, n);
}

rmw_ret_t rmw_count_subscribers(const rmw_node_t *node, const char *topic,
                                size_t *n)
{
    return count(node, topic, Kind::Sub, n);
}

rmw_ret_t rmw_count_services(const rmw_node_t *node, const char *name,
                             size_t *n)
{
    return count(node, name, Kind::Srv, n);
}

rmw_ret_t rmw_count_clients(const rmw_node_t *node, const char *name, size_t *n)
{
    return count(node, name, Kind::Cli, n);
}

rmw_ret_t rmw_get_publishers_info_by_topic(const rmw_node_t *node,
                                           rcutils_allocator_t *alloc,
                                           const char *topic, bool no_mangle,
                                           rmw_topic_endpoint_info_array_t *out)
{
    (void)no_mangle;
    return endpoints(node, alloc, topic, Kind::Pub, out);
}

rmw_ret_t rmw_get_subscriptions_info_by_topic(
    const rmw_node_t *node, rcutils_allocator_t *alloc, const char *topic,
    bool no_mangle, rmw_topic_endpoint_info_array_t *out)
{
    (void)no_mangle;
    return endpoints(node, alloc, topic, Kind::Sub, out);
}

} // extern "C"
