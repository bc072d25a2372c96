#include "tools/loom/serve/connection_loop.h"

#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <nlohmann/json.hpp>

#include "tools/loom/serve/responses.h"

namespace loom::serve {
namespace {

using Clock = RequestClock::Clock;

Clock::duration seconds(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// Numeric host and port of one end of a socket, as httplib formats Request::remote_addr.
void endpoint_of(int fd, bool peer, std::string &host, int &port) {
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    const int got = peer ? getpeername(fd, reinterpret_cast<sockaddr *>(&address), &length)
                         : getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length);
    std::array<char, NI_MAXHOST> name{};
    std::array<char, NI_MAXSERV> service{};
    if (got != 0 ||
        getnameinfo(reinterpret_cast<const sockaddr *>(&address), length, name.data(), name.size(),
                    service.data(), service.size(), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        host.clear();
        port = -1;
        return;
    }
    host = name.data();
    port = std::atoi(service.data());
}

std::string endpoints_key(const std::string &remote, int remote_port, const std::string &local,
                          int local_port) {
    return fmt::format("{}:{} {}:{}", remote, remote_port, local, local_port);
}

// Waits until the socket has `events`, at most until `until`; the poll's revents, 0 on timeout.
short wait_for(int fd, short events, Clock::time_point until) {
    for (;;) {
        const auto left = until - Clock::now();
        if (left <= Clock::duration::zero()) return 0;
        const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
        pollfd entry{.fd = fd, .events = events, .revents = 0};
        const int n = poll(&entry, 1, int(std::min<int64_t>(ms, 1000)));
        if (n > 0) return entry.revents;
        if (n < 0 && errno != EINTR) return POLLERR;
    }
}

// httplib's view of the socket: reads buffered and held to the request's deadline, writes held
// to the write timeout. Once a deadline is missed the stream fails every call, so that what
// httplib would answer (a 400 for a head cut short) is not sent; the loop answers 408 instead.
class DeadlineStream final : public httplib::Stream {
  public:
    DeadlineStream(int fd, const ConnectionLimits &limits, RequestClock &clock)
        : fd_(fd), limits_(limits), clock_(clock) {}

    // Why the request missed its deadline (the 408's message); empty while it has not.
    const std::string &missed_deadline() const { return missed_; }
    bool has_buffered() const { return begin_ < end_; }

    bool is_readable() const override {
        return missed_.empty() && (has_buffered() || wait_for(fd_, POLLIN, read_until()) != 0);
    }

    bool is_writable() const override {
        if (!missed_.empty()) return false;
        const short ready = wait_for(fd_, POLLOUT, Clock::now() + seconds(limits_.write_seconds));
        return (ready & POLLOUT) != 0 && (ready & (POLLERR | POLLHUP)) == 0;
    }

    ssize_t read(char *ptr, size_t size) override {
        if (!missed_.empty()) return -1;
        if (!has_buffered()) {
            const short ready = wait_for(fd_, POLLIN, read_until());
            if (ready == 0) {
                if (clock_.part() != RequestClock::Part::none) {
                    missed_ = Clock::now() >= clock_.deadline()
                                  ? clock_.missed_deadline()
                                  : fmt::format("no byte of the request arrived for {} s",
                                                limits_.read_seconds);
                }
                return -1;
            }
            const ssize_t n = recv(fd_, buffer_.data(), buffer_.size(), 0);
            if (n <= 0) return n;
            begin_ = 0;
            end_ = size_t(n);
        }
        const size_t n = std::min(size, end_ - begin_);
        std::copy_n(buffer_.data() + begin_, n, ptr);
        begin_ += n;
        if (clock_.part() == RequestClock::Part::body) clock_.body_arrived(n);
        return ssize_t(n);
    }

    ssize_t write(const char *ptr, size_t size) override {
        if (!is_writable()) return -1;
        return send(fd_, ptr, size, MSG_NOSIGNAL);
    }

    void get_remote_ip_and_port(std::string &ip, int &port) const override {
        endpoint_of(fd_, true, ip, port);
    }
    void get_local_ip_and_port(std::string &ip, int &port) const override {
        endpoint_of(fd_, false, ip, port);
    }
    socket_t socket() const override { return fd_; }

  private:
    Clock::time_point read_until() const {
        return std::min(clock_.deadline(), Clock::now() + seconds(limits_.read_seconds));
    }

    int fd_;
    const ConnectionLimits &limits_;
    RequestClock &clock_;
    std::string missed_;
    std::array<char, 4096> buffer_{};
    size_t begin_ = 0, end_ = 0;
};

// The answer to a request that missed its deadline, written straight to the socket (the stream
// refuses writes by then). Best effort: a client that is gone does not read it.
void send_request_timeout(int fd, const std::string &why) {
    const std::string body = error_json(408, why).dump();
    const std::string answer = fmt::format(
        "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: application/json\r\n"
        "Content-Length: {}\r\n\r\n{}",
        body.size(), body);
    if (wait_for(fd, POLLOUT, Clock::now() + std::chrono::seconds(1)) & POLLOUT) {
        send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
}

// Closes without a reset: a socket closed with unread bytes in its receive buffer sends RST,
// and a client's kernel that gets it may discard the answer not yet read. So our side is shut
// first (the client reads the answer, then its end of file) and what the client still sends is
// read and dropped until it closes too, for at most a second.
void close_gracefully(int fd) {
    shutdown(fd, SHUT_WR);
    const auto until = Clock::now() + std::chrono::seconds(1);
    std::array<char, 4096> sink{};
    while (wait_for(fd, POLLIN, until) != 0) {
        if (recv(fd, sink.data(), sink.size(), MSG_DONTWAIT) <= 0) break;
    }
    close(fd);
}

}  // namespace

void RequestClock::head_started(Clock::time_point now) {
    part_ = Part::head;
    started_ = now;
}

void RequestClock::body_started(Clock::time_point now) {
    part_ = Part::body;
    started_ = now;
    body_bytes_ = 0;
}

Clock::time_point RequestClock::deadline() const {
    switch (part_) {
        case Part::none:
            return Clock::time_point::max();
        case Part::head:
            return started_ + seconds(limits_.head_seconds);
        case Part::body:
            if (limits_.body_min_rate <= 0) return Clock::time_point::max();
            // Each body_min_rate bytes that arrived buy one more second.
            return started_ +
                   seconds(limits_.head_seconds + double(body_bytes_) / limits_.body_min_rate);
    }
    return Clock::time_point::max();
}

std::string RequestClock::missed_deadline() const {
    if (part_ == Part::head) {
        return fmt::format("the request's head did not arrive within {} s", limits_.head_seconds);
    }
    return fmt::format("the request's body arrived slower than {} bytes a second (after {} s)",
                       limits_.body_min_rate, limits_.head_seconds);
}

int ConnectionLoopServer::client_socket(const httplib::Request &request) const {
    const std::lock_guard lock(sockets_mutex_);
    const auto it = sockets_.find(endpoints_key(request.remote_addr, request.remote_port,
                                                request.local_addr, request.local_port));
    return it == sockets_.end() ? -1 : it->second;
}

bool ConnectionLoopServer::process_and_close_socket(socket_t sock) {
    RequestClock clock(limits_);
    DeadlineStream stream(sock, limits_, clock);
    bool ok = false;
    std::string key;
    for (size_t count = keep_alive_max_count_; count > 0 && svr_sock_ != INVALID_SOCKET; --count) {
        // Idle between requests: closed quietly after the keep-alive time, or sooner when the
        // server stops; a request's clock starts with its first byte.
        if (!stream.has_buffered()) {
            const auto idle_until = Clock::now() + seconds(limits_.keep_alive_seconds);
            short ready = 0;
            while (ready == 0 && svr_sock_ != INVALID_SOCKET && Clock::now() < idle_until) {
                ready =
                    wait_for(sock, POLLIN,
                             std::min(idle_until, Clock::now() + std::chrono::milliseconds(100)));
            }
            if (ready == 0) break;
        }
        clock.head_started(Clock::now());
        bool connection_closed = false;
        ok = process_request(stream, count == 1, connection_closed, [&](httplib::Request &request) {
            clock.body_started(Clock::now());
            key = endpoints_key(request.remote_addr, request.remote_port, request.local_addr,
                                request.local_port);
            const std::lock_guard lock(sockets_mutex_);
            sockets_[key] = sock;
        });
        if (!key.empty()) {
            const std::lock_guard lock(sockets_mutex_);
            sockets_.erase(key);
            key.clear();
        }
        if (!stream.missed_deadline().empty()) {
            send_request_timeout(sock, stream.missed_deadline());
            ok = false;
        }
        clock.request_ended();
        if (!ok || connection_closed) break;
    }
    close_gracefully(sock);
    return ok;
}

}  // namespace loom::serve
