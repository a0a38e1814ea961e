/* The Cyclone DDS configuration of nerve-ros2-dds's domain (ros2_config.c):
 * large-data settings by default, the user's CYCLONEDDS_URI, the bounds. */
#ifndef NERVE_ROS2_CONFIG_H
#define NERVE_ROS2_CONFIG_H

#include <stdint.h>

#include <dds/dds.h>

/* The largest sample Cyclone may reassemble or send for the bridge: the
 * smaller of --max-channel-size and --max-import-total, within Cyclone's
 * 32-bit setting. */
uint64_t ros2_config_max_sample(uint64_t max_chan, uint64_t max_total);

/* The configuration list (malloc'd; NULL out of memory): large-data
 * fragment, then `uri` (CYCLONEDDS_URI; NULL or "" for none), then
 * MaxSampleSize `max_sample`. */
char *ros2_config_string(const char *uri, uint64_t max_sample);

/* Creates DDS domain `domain` with that configuration, CYCLONEDDS_URI and
 * the bounds given. 0, or Cyclone's negative return code. */
int ros2_config_domain(uint32_t domain, uint64_t max_chan, uint64_t max_total);

/* The bytes writer `wr` retransmitted so far: its reliable readers lost
 * that much (0 when Cyclone keeps no statistics for it). */
uint64_t ros2_writer_rexmit_bytes(dds_entity_t wr);

#endif
