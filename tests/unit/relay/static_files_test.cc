#include "relay/static_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace natsfleet::relay {
namespace {

namespace fs = std::filesystem;

class StaticFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ =
        fs::temp_directory_path() /
        ("natsfleet-static-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(base_);
    fs::create_directories(base_ / "web" / "img");
    write(base_ / "web" / "index.html", "<p>page</p>");
    write(base_ / "web" / "app.js", "1");
    write(base_ / "web" / "img" / "index.html", "img index");
    write(base_ / "web" / "img" / "logo.svg", "<svg/>");
    write(base_ / "secret.txt", "secret");
    fs::create_symlink(base_ / "secret.txt", base_ / "web" / "escape.txt");
    fs::create_symlink(base_ / "web" / "app.js", base_ / "web" / "inside.js");
    root_ = fs::canonical(base_ / "web");
  }
  void TearDown() override { fs::remove_all(base_); }

  static void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

  fs::path base_;
  fs::path root_;
};

TEST_F(StaticFilesTest, ServesFilesAndDirectoryIndexes) {
  EXPECT_EQ(resolve_static_file(root_, "/"), root_ / "index.html");
  EXPECT_EQ(resolve_static_file(root_, "/app.js"), root_ / "app.js");
  EXPECT_EQ(resolve_static_file(root_, "/img"), root_ / "img" / "index.html");
  EXPECT_EQ(resolve_static_file(root_, "/img/"), root_ / "img" / "index.html");
  EXPECT_EQ(resolve_static_file(root_, "/img/logo%2Esvg"), root_ / "img" / "logo.svg");
  EXPECT_EQ(resolve_static_file(root_, "/inside.js"), root_ / "app.js");
}

TEST_F(StaticFilesTest, RefusesAnythingThatCouldLeaveTheRoot) {
  for (const char* path :
       {"/../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E%2Fsecret.txt", "/img/../../secret.txt",
        "/img/../index.html", "/./app.js", "/..", "/escape.txt", "/..%5csecret.txt",
        "/app.js%00.png", "//etc/passwd", "app.js", "", "/%zz", "/missing.html"}) {
    EXPECT_FALSE(resolve_static_file(root_, path)) << path;
  }
}

TEST(ContentType, NamesTheTypesThePageUses) {
  EXPECT_EQ(content_type_for("index.html"), "text/html; charset=utf-8");
  EXPECT_EQ(content_type_for("app.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(content_type_for("style.CSS"), "text/css; charset=utf-8");
  EXPECT_EQ(content_type_for("logo.svg"), "image/svg+xml");
  EXPECT_EQ(content_type_for("shot.png"), "image/png");
  EXPECT_EQ(content_type_for("data.json"), "application/json");
  EXPECT_EQ(content_type_for("archive.tar"), "application/octet-stream");
}

}  // namespace
}  // namespace natsfleet::relay
