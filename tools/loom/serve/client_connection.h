#pragma once
// Whether the client of a request is still connected, asked while its answer is being made.
//
// cpp-httplib (0.11, Debian's) gives a handler no way to see that its client hung up: a
// non-streamed request would only notice when the answer is written, a streamed one at its
// first failed write, so not while it waits in the queue or its prompt is decoded. The request
// does carry both ends' addresses, which name one TCP connection; this finds that socket among
// the process's descriptors once and then asks the kernel whether the peer has closed it.

#include <httplib.h>

namespace loom::serve {

class ClientConnection {
  public:
    explicit ClientConnection(const httplib::Request &request);

    // True once the client has closed its end (or the connection failed). A connection whose
    // socket could not be found is never reported closed: a failed write still ends it.
    bool closed() const;

  private:
    int fd_ = -1;  // owned by the HTTP server, open for as long as the request's handler runs
};

}  // namespace loom::serve
