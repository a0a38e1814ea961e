/* A Cyclone DDS type whose samples are CDR bytes, passed through unchanged
 * (tools/ros2/rawcdr.c). `nerve ros2` never decodes a message: it hands the
 * bytes of a nerve channel to DDS and the bytes DDS received to a channel,
 * so one type serves every ROS 2 message type; only the DDS type name
 * ("std_msgs::msg::dds_::String_") differs between topics. */
#ifndef NERVE_ROS2_RAWCDR_H
#define NERVE_ROS2_RAWCDR_H

#include <stddef.h>

#include <dds/dds.h>
#include <dds/ddsi/ddsi_serdata.h>
#include <dds/ddsi/ddsi_sertype.h>

/* What dds_write() / dds_write_ts() take on a raw CDR topic: `len` bytes
 * at `data` (the encapsulation header first). When `check` is set it is
 * called once the bytes are copied into the DDS sample; if it returns
 * non-zero the write fails and *stale is set (a nerve view that a writer
 * overwrote while it was copied). */
struct rawcdr_sample {
    const void *data;
    size_t len;
    int (*check)(const void *arg);
    const void *check_arg;
    int *stale;
};

/* A new raw CDR type named `type_name` (the DDS type name), for
 * dds_create_topic_sertype(), which takes over the reference. NULL when
 * out of memory. Setup phase only. */
struct ddsi_sertype *rawcdr_type_new(const char *type_name);

/* The CDR bytes of a sample taken with dds_takecdr() from a raw CDR
 * topic, and their number. */
const void *rawcdr_bytes(const struct ddsi_serdata *d, size_t *len);

/* Free the pool of sample buffers (at exit, after every entity is
 * deleted). */
void rawcdr_pool_fini(void);

#endif
