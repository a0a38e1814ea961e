// Init options, contexts, nodes and guard conditions.

#include "rmw_nerve.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <cstring>

#include <rcutils/logging.h>
#include <rcutils/strdup.h>
#include <rmw/discovery_options.h>
#include <rmw/features.h>
#include <rmw/init.h>
#include <rmw/init_options.h>
#include <rmw/security_options.h>
#include <rmw/validate_namespace.h>
#include <rmw/validate_node_name.h>

using namespace rmw_nerve;

namespace rmw_nerve {
rmw_gid_t Context::new_gid()
{
    rmw_gid_t g{};
    g.implementation_identifier = kIdentifier;
    uint64_t n = next_entity.fetch_add(1);
    memcpy(g.data, &id, 8);
    memcpy(g.data + 8, &n, 8);
    return g;
}
} // namespace rmw_nerve

#define CHECK_ID(h, ret)                                                       \
    do {                                                                       \
        if (!(h))                                                              \
            return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: %s is NULL",     \
                        #h);                                                   \
        if ((h)->implementation_identifier != kIdentifier &&                   \
            strcmp((h)->implementation_identifier                              \
                       ? (h)->implementation_identifier                        \
                       : "",                                                   \
                   kIdentifier) != 0)                                          \
            return fail(RMW_RET_INCORRECT_RMW_IMPLEMENTATION,                  \
                        "rmw_nerve: %s belongs to %s", #h,                     \
                        (h)->implementation_identifier);                       \
    } while (0)

extern "C" {

const char *rmw_get_implementation_identifier(void)
{
    return kIdentifier;
}

const char *rmw_get_serialization_format(void)
{
    return "cdr";
}

rmw_ret_t rmw_set_log_severity(rmw_log_severity_t severity)
{
    // The severities of rmw and rcutils have the same values.
    if (rcutils_logging_set_logger_level("rmw_nerve_cpp", int(severity)) !=
        RCUTILS_RET_OK)
        return fail(RMW_RET_ERROR, "rmw_nerve: bad log severity %d",
                    int(severity));
    return RMW_RET_OK;
}

bool rmw_feature_supported(rmw_feature_t feature)
{
    (void)feature; // neither message-info sequence numbers nor type hashes
    return false;
}

rmw_ret_t rmw_init_options_init(rmw_init_options_t *o,
                                rcutils_allocator_t allocator)
{
    if (!o)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: options is NULL");
    if (o->implementation_identifier)
        return fail(RMW_RET_INVALID_ARGUMENT,
                    "rmw_nerve: init options already initialised");
    if (!rcutils_allocator_is_valid(&allocator))
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: bad allocator");
    o->instance_id = 0;
    o->implementation_identifier = kIdentifier;
    o->allocator = allocator;
    o->impl = nullptr;
    o->enclave = nullptr;
    o->domain_id = RMW_DEFAULT_DOMAIN_ID;
    o->security_options = rmw_get_default_security_options();
#if __has_include(<rmw/localhost.h>) // Jazzy; Kilted dropped localhost_only
    o->localhost_only = RMW_LOCALHOST_ONLY_DEFAULT;
#endif
    o->discovery_options = rmw_get_zero_initialized_discovery_options();
    return rmw_discovery_options_init(&o->discovery_options, 0, &allocator);
}

rmw_ret_t rmw_init_options_copy(const rmw_init_options_t *src,
                                rmw_init_options_t *dst)
{
    CHECK_ID(src, RMW_RET_INVALID_ARGUMENT);
    if (!dst)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: dst is NULL");
    if (dst->implementation_identifier)
        return fail(RMW_RET_INVALID_ARGUMENT,
                    "rmw_nerve: dst already initialised");
    rcutils_allocator_t alloc = src->allocator;
    rcutils_allocator_t *a = &alloc;
    rmw_init_options_t tmp = *src;
    tmp.enclave = nullptr;
    if (src->enclave) {
        tmp.enclave = rcutils_strdup(src->enclave, *a);
        if (!tmp.enclave)
            return fail(RMW_RET_BAD_ALLOC, "rmw_nerve: out of memory");
    }
    tmp.security_options = rmw_get_zero_initialized_security_options();
    rmw_ret_t r = rmw_security_options_copy(&src->security_options, a,
                                            &tmp.security_options);
    if (r != RMW_RET_OK) {
        a->deallocate(tmp.enclave, a->state);
        return r;
    }
    tmp.discovery_options = rmw_get_zero_initialized_discovery_options();
    r = rmw_discovery_options_copy(&src->discovery_options, a,
                                   &tmp.discovery_options);
    if (r != RMW_RET_OK) {
        rmw_security_options_fini(&tmp.security_options, a);
        a->deallocate(tmp.enclave, a->state);
        return r;
    }
    *dst = tmp;
    return RMW_RET_OK;
}

rmw_ret_t rmw_init_options_fini(rmw_init_options_t *o)
{
    CHECK_ID(o, RMW_RET_INVALID_ARGUMENT);
    rcutils_allocator_t *a = &o->allocator;
    if (!rcutils_allocator_is_valid(a))
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: bad allocator");
    a->deallocate(o->enclave, a->state);
    rmw_ret_t r = rmw_security_options_fini(&o->security_options, a);
    if (r != RMW_RET_OK)
        return r;
    r = rmw_discovery_options_fini(&o->discovery_options);
    *o = rmw_get_zero_initialized_init_options();
    return r;
}

rmw_ret_t rmw_init(const rmw_init_options_t *options, rmw_context_t *context)
{
    CHECK_ID(options, RMW_RET_INVALID_ARGUMENT);
    if (!context)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: context is NULL");
    if (context->implementation_identifier)
        return fail(RMW_RET_INVALID_ARGUMENT,
                    "rmw_nerve: context already initialised");
    if (!options->enclave)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: no enclave");
    auto *impl = new (std::nothrow) rmw_context_impl_s;
    if (!impl)
        return fail(RMW_RET_BAD_ALLOC, "rmw_nerve: out of memory");
    Context &c = impl->ctx;
    if (getrandom(&c.id, sizeof c.id, 0) != sizeof c.id || c.id == 0)
        c.id = uint64_t(real_ns()) ^ (uint64_t(getpid()) << 32);
    c.domain =
        options->domain_id == RMW_DEFAULT_DOMAIN_ID ? 0 : options->domain_id;
    context->instance_id = options->instance_id;
    context->implementation_identifier = kIdentifier;
    context->actual_domain_id = c.domain;
    context->options = rmw_get_zero_initialized_init_options();
    rmw_ret_t r = rmw_init_options_copy(options, &context->options);
    if (r != RMW_RET_OK) {
        delete impl;
        *context = rmw_get_zero_initialized_context();
        return r;
    }
    c.graph.reset(new Graph(c.domain, c.id));
    r = c.graph->start();
    if (r != RMW_RET_OK) {
        rmw_error_string_t keep = rmw_get_error_string();
        ignore(rmw_init_options_fini(&context->options));
        delete impl;
        *context = rmw_get_zero_initialized_context();
        rmw_reset_error();
        RMW_SET_ERROR_MSG(keep.str);
        return r;
    }
    context->impl = impl;
    return RMW_RET_OK;
}

rmw_ret_t rmw_shutdown(rmw_context_t *context)
{
    CHECK_ID(context, RMW_RET_INVALID_ARGUMENT);
    if (!context->impl)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: context not init");
    Context &c = context->impl->ctx;
    if (!c.shut_down->load()) {
        c.graph->stop();
        // Then every wait of this context that is blocked, or about to
        // block, ends (SHUTDOWN WAKE in wait.cpp). Last, so that rcl marks
        // the context invalid right after: rclpy's and rclcpp's signal
        // thread triggers the SIGINT guard and then shuts down; a wait
        // ended earlier would find the context still valid.
        c.shut_down->store(true);
        wake_waiters();
    }
    return RMW_RET_OK;
}

rmw_ret_t rmw_context_fini(rmw_context_t *context)
{
    CHECK_ID(context, RMW_RET_INVALID_ARGUMENT);
    if (!context->impl)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: context not init");
    if (!*context->impl->ctx.shut_down)
        return fail(RMW_RET_INVALID_ARGUMENT,
                    "rmw_nerve: context not shut down");
    rmw_ret_t r = rmw_init_options_fini(&context->options);
    delete context->impl;
    *context = rmw_get_zero_initialized_context();
    return r;
}

// ---- guard conditions -----------------------------------------------------

rmw_guard_condition_t *rmw_create_guard_condition(rmw_context_t *context)
{
    if (!context || !context->impl) {
        fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: context not init");
        return nullptr;
    }
    auto *g = new (std::nothrow) rmw_guard_condition_t;
    auto *d = new (std::nothrow) GuardCondition;
    if (!g || !d) {
        delete g;
        delete d;
        fail(RMW_RET_BAD_ALLOC, "rmw_nerve: out of memory");
        return nullptr;
    }
    g->implementation_identifier = kIdentifier;
    g->data = d;
    g->context = context;
    return g;
}

rmw_ret_t rmw_destroy_guard_condition(rmw_guard_condition_t *g)
{
    CHECK_ID(g, RMW_RET_INVALID_ARGUMENT);
    delete static_cast<GuardCondition *>(g->data);
    delete g;
    return RMW_RET_OK;
}

rmw_ret_t rmw_trigger_guard_condition(const rmw_guard_condition_t *g)
{
    CHECK_ID(g, RMW_RET_INVALID_ARGUMENT);
    static_cast<GuardCondition *>(g->data)->triggered.store(true);
    wake_waiters();
    return RMW_RET_OK;
}

// ---- nodes ----------------------------------------------------------------

rmw_node_t *rmw_create_node(rmw_context_t *context, const char *name,
                            const char *namespace_)
{
    if (!context || !context->impl ||
        strcmp(context->implementation_identifier ?: "", kIdentifier) != 0) {
        fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: context not init");
        return nullptr;
    }
    if (*context->impl->ctx.shut_down) {
        fail(RMW_RET_ERROR, "rmw_nerve: context is shut down");
        return nullptr;
    }
    int vr = 0;
    if (!name || rmw_validate_node_name(name, &vr, nullptr) != RMW_RET_OK ||
        vr != RMW_NODE_NAME_VALID) {
        fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: invalid node name");
        return nullptr;
    }
    if (!namespace_ ||
        rmw_validate_namespace(namespace_, &vr, nullptr) != RMW_RET_OK ||
        vr != RMW_NAMESPACE_VALID) {
        fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: invalid node namespace");
        return nullptr;
    }
    Context &c = context->impl->ctx;
    auto *n = new Node;
    n->ctx = &c;
    n->id = c.next_entity.fetch_add(1);
    n->graph_guard = rmw_create_guard_condition(context);
    auto *node = new rmw_node_t;
    node->implementation_identifier = kIdentifier;
    node->data = n;
    node->name = strdup(name);
    node->namespace_ = strdup(namespace_);
    node->context = context;
    NodeRec rec;
    rec.id = n->id;
    rec.name = name;
    rec.ns = namespace_;
    rec.enclave = context->options.enclave ? context->options.enclave : "/";
    c.graph->watch(static_cast<GuardCondition *>(n->graph_guard->data));
    c.graph->add_node(rec);
    return node;
}

rmw_ret_t rmw_destroy_node(rmw_node_t *node)
{
    CHECK_ID(node, RMW_RET_INVALID_ARGUMENT);
    auto *n = static_cast<Node *>(node->data);
    n->ctx->graph->remove_node(n->id);
    n->ctx->graph->unwatch(static_cast<GuardCondition *>(n->graph_guard->data));
    ignore(rmw_destroy_guard_condition(n->graph_guard));
    free(const_cast<char *>(node->name));
    free(const_cast<char *>(node->namespace_));
    delete n;
    delete node;
    return RMW_RET_OK;
}

const rmw_guard_condition_t *
rmw_node_get_graph_guard_condition(const rmw_node_t *node)
{
    if (!node || !node->data) {
        fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: node is NULL");
        return nullptr;
    }
    return static_cast<Node *>(node->data)->graph_guard;
}

rmw_ret_t rmw_compare_gids_equal(const rmw_gid_t *a, const rmw_gid_t *b,
                                 bool *result)
{
    CHECK_ID(a, RMW_RET_INVALID_ARGUMENT);
    CHECK_ID(b, RMW_RET_INVALID_ARGUMENT);
    if (!result)
        return fail(RMW_RET_INVALID_ARGUMENT, "rmw_nerve: result is NULL");
    *result = memcmp(a->data, b->data, RMW_GID_STORAGE_SIZE) == 0;
    return RMW_RET_OK;
}

} // extern "C"
