#pragma once
// Each connection's loop for `loom serve`: keep-alive, deadlines for a request's arrival, 408,
// a closing that does not reset, and the socket each request came on.
//
// cpp-httplib 0.11 (Debian's) times each read alone: a client sending a byte every few seconds
// holds a worker forever, and one that stalls is dropped without a status. Its Server lets a
// subclass run the connection (process_and_close_socket, a virtual for its TLS server) over any
// Stream and parse each request with process_request, so the loop and the socket stream are
// ours and the HTTP parsing and routing stay httplib's:
//   - the head (request line and headers) must arrive within `head_seconds` of its first byte,
//     and the body at an average of `body_min_rate` bytes a second after the same allowance
//     (Apache's mod_reqtimeout rule: `body=30,MinRate=500`), no read waiting longer than
//     `read_seconds`; past any of them the client gets 408 and the connection is closed;
//   - an idle keep-alive connection closes after `keep_alive_seconds` without a status;
//   - a connection is closed by shutting our side and reading what the client still sends for a
//     moment, so that unread bytes do not turn the close into a reset (RST) that could destroy
//     the answer before the client reads it;
//   - handlers can ask which socket their request came on (ClientConnection polls it).
#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>

namespace loom::serve {

struct ConnectionLimits {
    double head_seconds = 30;
    double body_min_rate = 500;  // bytes a second; 0: no rate
    double read_seconds = 600;
    double write_seconds = 600;
    double keep_alive_seconds = 5;
};

// The deadline of the request being read, from the limits and what has arrived so far.
class RequestClock {
  public:
    using Clock = std::chrono::steady_clock;
    enum class Part { none, head, body };

    explicit RequestClock(const ConnectionLimits &limits) : limits_(limits) {}

    void head_started(Clock::time_point now);
    void body_started(Clock::time_point now);
    void body_arrived(size_t bytes) { body_bytes_ += bytes; }
    void request_ended() { part_ = Part::none; }

    Part part() const { return part_; }
    // When the next bytes must have arrived; time_point::max() while no request is read.
    Clock::time_point deadline() const;
    // Why a request that missed its deadline gets 408, for the answer's message.
    std::string missed_deadline() const;

  private:
    ConnectionLimits limits_;
    Part part_ = Part::none;
    Clock::time_point started_{};
    size_t body_bytes_ = 0;
};

class ConnectionLoopServer : public httplib::Server {
  public:
    explicit ConnectionLoopServer(const ConnectionLimits &limits) : limits_(limits) {}

    // The socket the request is read from and answered on, open while its handler runs; -1 when
    // the request is not one of this server's (a test's).
    int client_socket(const httplib::Request &request) const;

  private:
    bool process_and_close_socket(socket_t sock) override;

    ConnectionLimits limits_;
    mutable std::mutex sockets_mutex_;
    std::map<std::string, int> sockets_;  // by the request's two ends (endpoints_key)
};

}  // namespace loom::serve
