// What rmw_nerve does not offer. Every function of the rmw interface is
// defined here or in the other files, so that a process with rmw_nerve
// preloaded never reaches another RMW's code; these return
// RMW_RET_UNSUPPORTED with a message (rcl and rclpy treat that as "not
// available", as they do for the same calls of other RMWs).

#include "rmw_nerve.hpp"

#include <rmw/dynamic_message_type_support.h>
#include <rmw/event.h>
#include <rmw/get_network_flow_endpoints.h>
#include <rmw/qos_profiles.h>

using namespace rmw_nerve;

#define UNSUPPORTED(what)                                                      \
    fail(RMW_RET_UNSUPPORTED, "rmw_nerve: %s is not supported", what)

extern "C" {

rmw_ret_t
rmw_init_publisher_allocation(const rosidl_message_type_support_t *,
                              const rosidl_runtime_c__Sequence__bound *,
                              rmw_publisher_allocation_t *)
{
    return UNSUPPORTED("preallocation (the ring is the allocation)");
}

rmw_ret_t rmw_fini_publisher_allocation(rmw_publisher_allocation_t *)
{
    return UNSUPPORTED("preallocation (the ring is the allocation)");
}

rmw_ret_t
rmw_init_subscription_allocation(const rosidl_message_type_support_t *,
                                 const rosidl_runtime_c__Sequence__bound *,
                                 rmw_subscription_allocation_t *)
{
    return UNSUPPORTED("preallocation (the ring is the allocation)");
}

rmw_ret_t rmw_fini_subscription_allocation(rmw_subscription_allocation_t *)
{
    return UNSUPPORTED("preallocation (the ring is the allocation)");
}

rmw_ret_t
rmw_get_serialized_message_size(const rosidl_message_type_support_t *,
                                const rosidl_runtime_c__Sequence__bound *,
                                size_t *)
{
    return UNSUPPORTED("rmw_get_serialized_message_size");
}

rmw_ret_t
rmw_publisher_get_network_flow_endpoints(const rmw_publisher_t *,
                                         rcutils_allocator_t *,
                                         rmw_network_flow_endpoint_array_t *)
{
    return UNSUPPORTED("network flow endpoints (there is no network)");
}

rmw_ret_t
rmw_subscription_get_network_flow_endpoints(const rmw_subscription_t *,
                                            rcutils_allocator_t *,
                                            rmw_network_flow_endpoint_array_t *)
{
    return UNSUPPORTED("network flow endpoints (there is no network)");
}

rmw_ret_t rmw_subscription_set_content_filter(
    rmw_subscription_t *, const rmw_subscription_content_filter_options_t *)
{
    return UNSUPPORTED("content filters");
}

rmw_ret_t
rmw_subscription_get_content_filter(const rmw_subscription_t *,
                                    rcutils_allocator_t *,
                                    rmw_subscription_content_filter_options_t *)
{
    return UNSUPPORTED("content filters");
}

rmw_ret_t rmw_serialization_support_init(
    const char *, rcutils_allocator_t *,
    rosidl_dynamic_typesupport_serialization_support_t *)
{
    return UNSUPPORTED("dynamic type support");
}

rmw_ret_t rmw_take_dynamic_message(const rmw_subscription_t *,
                                   rosidl_dynamic_typesupport_dynamic_data_t *,
                                   bool *, rmw_subscription_allocation_t *)
{
    return UNSUPPORTED("dynamic type support");
}

rmw_ret_t rmw_take_dynamic_message_with_info(
    const rmw_subscription_t *, rosidl_dynamic_typesupport_dynamic_data_t *,
    bool *, rmw_message_info_t *, rmw_subscription_allocation_t *)
{
    return UNSUPPORTED("dynamic type support");
}

} // extern "C"
