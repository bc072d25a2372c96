#pragma once
// Progress of long work on stderr: a bar redrawn in place on a terminal
//   quantizing [#########.....................]  31% (7/21 tensors)
// and a plain line at every tenth of the way (and the end) when stderr is a file or a pipe, so
// that a log holds a few lines rather than hundreds of carriage returns.
#include <cstdint>
#include <string>

namespace loom::tools {

class ProgressBar {
  public:
    // `what`: the work ("quantizing"); `unit`: what is counted ("tensors").
    ProgressBar(std::string what, std::string unit);
    // `fraction_done` in [0, 1]; `done` of `total` units shown beside it. The last call (done ==
    // total) ends the line.
    void update(double fraction_done, int64_t done, int64_t total);

  private:
    std::string what_, unit_;
    bool terminal_;
    int shown_ = -1;  // the percentage last drawn (a terminal) or the tenth last written (a log)
};

}  // namespace loom::tools
