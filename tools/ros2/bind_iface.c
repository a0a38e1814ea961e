/* nerve-ros2-dds listens where its Cyclone DDS configuration says.
 *
 * Cyclone DDS 0.10 (Debian's, and ROS 2 Jazzy's) binds the unicast
 * receive sockets of a participant, discovery and data, to INADDR_ANY
 * whatever interface its configuration names (ddsi_udp.c: bind_to_any for
 * every receive socket; only the transmit socket is bound to the
 * interface's address). Under a loopback-only configuration
 * (<NetworkInterface address="127.0.0.1"/>, multicast off) the bridge
 * would still accept datagrams on every interface of the host, where Fast
 * DDS, so configured, binds 127.0.0.1.
 *
 * So this program defines bind(). The dynamic linker resolves libddsc's
 * calls to it (a program's own definitions come before its libraries'),
 * and it passes every call on to the C library's bind() unchanged, except
 * one: an IPv4 datagram socket without SO_REUSEADDR (Cyclone sets that on
 * multicast receive sockets only, which must stay on INADDR_ANY to get
 * group traffic) bound to INADDR_ANY, while the configuration names
 * exactly one interface. That bind goes to the interface's address, the
 * address Cyclone advertises to its peers, so nothing they send is lost.
 *
 * The configuration is read once, at the first bind, from CYCLONEDDS_URI
 * (what `nerve ros2 --dds-config` sets): inline XML, or a comma-separated
 * list of files (file://PATH or PATH), the first file that names
 * interfaces deciding. An interface is named by <NetworkInterface
 * address="A"/> or name="N" (resolved with getifaddrs), or by the older
 * <NetworkInterfaceAddress>A or N</NetworkInterfaceAddress>. Anything
 * else (no configuration, several interfaces, "auto", a name without an
 * IPv4 address) leaves Cyclone's bind as it is. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int (*real_bind)(int, const struct sockaddr *, socklen_t);
static struct in_addr iface; /* the one configured interface */
static int have_iface;

/* The whole file at `path` (NUL-terminated, malloc'd), or NULL. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[4096];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && len < (1u << 20)) {
        if (len + n + 1 > cap) {
            cap = 2 * (len + n + 1);
            char *b = realloc(buf, cap);
            if (b == NULL) {
                break;
            }
            buf = b;
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (buf != NULL) {
        buf[len] = 0;
    }
    return buf;
}

/* The IPv4 address of `word` (an address, or an interface's name) into
 * *out: 1, or 0 when it has none. */
static int resolve(const char *word, struct in_addr *out)
{
    if (inet_pton(AF_INET, word, out) == 1) {
        return 1;
    }
    struct ifaddrs *all, *i;
    int found = 0;
    if (getifaddrs(&all) != 0) {
        return 0;
    }
    for (i = all; i != NULL && !found; i = i->ifa_next) {
        if (i->ifa_addr != NULL && i->ifa_addr->sa_family == AF_INET &&
            strcmp(i->ifa_name, word) == 0) {
            *out = ((const struct sockaddr_in *)(const void *)i->ifa_addr)
                       ->sin_addr;
            found = 1;
        }
    }
    freeifaddrs(all);
    return found;
}

/* Copy the value that follows `key` in `p` up to a character of `stop`
 * into word[0..len). */
static void value_after(const char *p, const char *key, const char *stop,
                        char *word, size_t len)
{
    p += strlen(key);
    size_t n = strcspn(p, stop);
    if (n >= len) {
        n = len - 1;
    }
    memcpy(word, p, n);
    word[n] = 0;
    /* Trim blanks around a NetworkInterfaceAddress's text. */
    while (n > 0 && (word[n - 1] == ' ' || word[n - 1] == '\n' ||
                     word[n - 1] == '\t' || word[n - 1] == '\r')) {
        word[--n] = 0;
    }
    size_t lead = strspn(word, " \n\t\r");
    memmove(word, word + lead, n - lead + 1);
}

/* How many interfaces the XML in `xml` names (0 when none), and the first
 * one in word[0..len). Element names are matched in any case, as Cyclone
 * does. */
static int interfaces_of(const char *xml, char *word, size_t len)
{
    int count = 0;
    word[0] = 0;
    for (const char *p = xml; (p = strcasestr(p, "<NetworkInterface")) != NULL;
         p++) {
        const char *after = p + strlen("<NetworkInterface");
        if (strncasecmp(after, "Address>", 8) == 0) {
            /* <NetworkInterfaceAddress>A[,B...]</...> */
            char w[256];
            value_after(p, "<NetworkInterfaceAddress>", "<", w, sizeof w);
            count += strchr(w, ',') != NULL ? 2 : 1;
            if (count == 1) {
                snprintf(word, len, "%s", w);
            }
            continue;
        }
        if (*after != ' ' && *after != '\t' && *after != '\n' &&
            *after != '/') {
            continue; /* <NetworkInterfaces>, the list element itself */
        }
        const char *end = strchr(after, '>');
        const char *a = strcasestr(after, "address=\"");
        const char *n = strcasestr(after, "name=\"");
        count++;
        if (count == 1 && a != NULL && (end == NULL || a < end)) {
            value_after(a, "address=\"", "\"", word, len);
        } else if (count == 1 && n != NULL && (end == NULL || n < end)) {
            value_after(n, "name=\"", "\"", word, len);
        }
    }
    return count;
}

static void configure(void)
{
    real_bind = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(
        RTLD_NEXT, "bind");
    const char *uri = getenv("CYCLONEDDS_URI");
    if (uri == NULL || real_bind == NULL) {
        return;
    }
    char word[256];
    int count = 0;
    if (uri[strspn(uri, " \t\n")] == '<') {
        count = interfaces_of(uri, word, sizeof word);
    } else {
        char *list = strdup(uri), *save = NULL;
        for (char *f = list ? strtok_r(list, ",", &save) : NULL;
             f != NULL && count == 0; f = strtok_r(NULL, ",", &save)) {
            f += strspn(f, " \t\n");
            if (strncmp(f, "file://", 7) == 0) {
                f += 7;
            }
            char *xml = slurp(f);
            if (xml != NULL) {
                count = interfaces_of(xml, word, sizeof word);
                free(xml);
            }
        }
        free(list);
    }
    if (count == 1 && strcasecmp(word, "auto") != 0 && resolve(word, &iface)) {
        have_iface = 1;
    }
}

int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
    pthread_once(&once, configure);
    if (real_bind == NULL) {
        return -1; /* no C library bind: cannot happen with glibc */
    }
    if (!have_iface || addr == NULL || addr->sa_family != AF_INET ||
        len < (socklen_t)sizeof(struct sockaddr_in)) {
        return real_bind(fd, addr, len);
    }
    struct sockaddr_in in;
    memcpy(&in, addr, sizeof in);
    int type = 0, reuse = 0;
    socklen_t tl = sizeof type, rl = sizeof reuse;
    if (in.sin_addr.s_addr != htonl(INADDR_ANY) ||
        getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 ||
        type != SOCK_DGRAM ||
        getsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, &rl) != 0 ||
        reuse != 0) {
        return real_bind(fd, addr, len);
    }
    in.sin_addr = iface;
    return real_bind(fd, (const struct sockaddr *)&in, sizeof in);
}
