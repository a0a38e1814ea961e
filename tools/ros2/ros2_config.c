/* The Cyclone DDS configuration of nerve-ros2-dds's domain: the
 * large-data settings first (a user's CYCLONEDDS_URI may change them), then
 * the user's CYCLONEDDS_URI, then the bounds of --max-channel-size and
 * --max-import-total (last, so that no configuration lifts them).
 *
 * Cyclone DDS 0.10 reads its configuration as a comma-separated list of
 * files and XML fragments, later ones overriding earlier ones; the domain
 * is created with that list (dds_create_domain) before the participant
 * joins it. CYCLONEDDS_URI itself is left as it is, for bind_iface.c.
 *
 * Large data (the advice of Cyclone DDS for samples of megabytes over
 * UDP, the settings of dds/cyclonedds-large-data.xml): socket buffers of
 * up to 4 MiB, as large as the kernel allows (net.core.rmem_max /
 * wmem_max), and 8 MiB of unacknowledged data per writer before it
 * blocks.
 *
 * Bounds: Internal/MaxSampleSize is the largest serialized sample Cyclone
 * reassembles or sends; a larger one is dropped while its fragments
 * arrive, so a peer's 2 GiB sample costs at most the bound, not its size.
 * The bound is the largest sample the bridge could accept into a channel:
 * the smaller of --max-channel-size and --max-import-total.
 *
 * Losses: a reliable reader whose socket buffer is smaller than a burst of
 * a large sample's fragments loses fragments, asks for them again, and
 * the writer retransmits; Cyclone counts the bytes per writer
 * ("rexmit_bytes" of dds_statistics.h), which the bridge's summary
 * reports per topic. */
#include "ros2_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dds/dds.h>
#include <dds/ddsc/dds_statistics.h>

#define FRAG_HEAD "<CycloneDDS><Domain id=\"any\"><Internal>"
#define FRAG_TAIL "</Internal></Domain></CycloneDDS>"

static const char large_data[] =
    FRAG_HEAD "<SocketReceiveBufferSize min=\"default\" max=\"4MB\"/>"
              "<SocketSendBufferSize min=\"default\" max=\"4MB\"/>"
              "<Watermarks><WhcHigh>8MB</WhcHigh></Watermarks>" FRAG_TAIL;

uint64_t ros2_config_max_sample(uint64_t max_chan, uint64_t max_total)
{
    uint64_t b = max_chan < max_total ? max_chan : max_total;
    /* Cyclone's setting is a 32-bit size; 0 would mean nothing at all. */
    if (b > 0x7fffffffu) {
        b = 0x7fffffffu;
    }
    return b == 0 ? 1 : b;
}

char *ros2_config_string(const char *uri, uint64_t max_sample)
{
    if (uri == NULL) {
        uri = "";
    }
    size_t len = strlen(large_data) + strlen(uri) + 256;
    char *s = malloc(len);
    if (s == NULL) {
        return NULL;
    }
    snprintf(s, len,
             "%s%s%s," FRAG_HEAD
             "<MaxSampleSize>%lluB</MaxSampleSize>" FRAG_TAIL,
             large_data, uri[0] != '\0' ? "," : "", uri,
             (unsigned long long)max_sample);
    return s;
}

int ros2_config_domain(uint32_t domain, uint64_t max_chan, uint64_t max_total)
{
    char *cfg = ros2_config_string(getenv("CYCLONEDDS_URI"),
                                   ros2_config_max_sample(max_chan, max_total));
    if (cfg == NULL) {
        return DDS_RETCODE_OUT_OF_RESOURCES;
    }
    dds_entity_t d = dds_create_domain(domain, cfg);
    free(cfg);
    return d < 0 ? (int)d : 0;
}

uint64_t ros2_writer_rexmit_bytes(dds_entity_t wr)
{
    struct dds_statistics *st = dds_create_statistics(wr);
    uint64_t n = 0;
    if (st != NULL) {
        const struct dds_stat_keyvalue *kv =
            dds_refresh_statistics(st) == DDS_RETCODE_OK
                ? dds_lookup_statistic(st, "rexmit_bytes")
                : NULL;
        if (kv != NULL && kv->kind == DDS_STAT_KIND_UINT64) {
            n = kv->u.u64;
        }
        dds_delete_statistics(st);
    }
    return n;
}
