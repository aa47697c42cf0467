// Every test program writes its temporary files into a folder of its own: before main,
// a fresh folder is made under the temporary directory (TEST_TMPDIR, TMPDIR or /tmp)
// and TEST_TMPDIR points there, so ::testing::TempDir() names it; it is removed at exit.
// Tests that ctest runs at the same time therefore never share an output folder, its
// files or its vitune lock.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

class PrivateTempDir {
 public:
  PrivateTempDir() {
    const char* parent = std::getenv("TEST_TMPDIR");
    if (parent == nullptr || *parent == '\0') parent = std::getenv("TMPDIR");
    std::string pattern = std::string(parent && *parent ? parent : "/tmp") + "/vitune-test-XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    if (mkdtemp(name.data()) == nullptr) throw std::runtime_error("cannot create a folder like " + pattern);
    path_ = name.data();
    owner_ = ::getpid();
    setenv("TEST_TMPDIR", (path_ + "/").c_str(), 1);
  }
  // A forked child that exits normally leaves the folder to its parent.
  ~PrivateTempDir() {
    if (::getpid() != owner_) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

 private:
  std::string path_;
  pid_t owner_ = 0;
};

const PrivateTempDir private_temp_dir;

}  // namespace
