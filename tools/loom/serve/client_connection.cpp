#include "tools/loom/serve/client_connection.h"

#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <string>

namespace loom::serve {
namespace {

struct Endpoint {
    std::string address;
    int port = -1;
    bool operator==(const Endpoint &) const = default;
};

// Numeric host and port, formatted as cpp-httplib formats Request::remote_addr / local_addr.
Endpoint endpoint_of(const sockaddr_storage &address, socklen_t length) {
    char host[NI_MAXHOST];
    char service[NI_MAXSERV];
    if (getnameinfo(reinterpret_cast<const sockaddr *>(&address), length, host, sizeof(host),
                    service, sizeof(service), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        return {};
    }
    return {host, std::atoi(service)};
}

bool connects(int fd, const Endpoint &local, const Endpoint &remote) {
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    if (getpeername(fd, reinterpret_cast<sockaddr *>(&address), &length) != 0 ||
        endpoint_of(address, length) != remote) {
        return false;
    }
    length = sizeof(address);
    return getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) == 0 &&
           endpoint_of(address, length) == local;
}

int find_socket(const Endpoint &local, const Endpoint &remote) {
    DIR *descriptors = opendir("/proc/self/fd");
    if (descriptors == nullptr) return -1;
    int found = -1;
    while (const dirent *entry = readdir(descriptors)) {
        char *end = nullptr;
        const long fd = std::strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0' || fd == dirfd(descriptors)) continue;
        struct stat status {};
        if (fstat(int(fd), &status) != 0 || !S_ISSOCK(status.st_mode)) continue;
        if (connects(int(fd), local, remote)) {
            found = int(fd);
            break;
        }
    }
    closedir(descriptors);
    return found;
}

}  // namespace

ClientConnection::ClientConnection(const httplib::Request &request)
    : fd_(find_socket({request.local_addr, request.local_port},
                      {request.remote_addr, request.remote_port})) {}

bool ClientConnection::closed() const {
    if (fd_ < 0) return false;
    // POLLRDHUP: the peer shut its sending side. HTTP clients do that only when they leave (a
    // pipelined next request would make the socket readable, not hung up).
    pollfd entry{.fd = fd_, .events = POLLRDHUP, .revents = 0};
    if (poll(&entry, 1, 0) < 0) return false;
    return (entry.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

}  // namespace loom::serve
