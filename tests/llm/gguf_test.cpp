// GGUF reader: files built byte by byte here (every metadata type, arrays, alignment, split parts), the real
// models against the PyPI gguf package's reader, and malformed files that must each give one clear error.
#include "gguf/gguf.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

namespace tg::llm {
namespace {

// A little-endian GGUF image under construction.
struct Builder {
  std::vector<uint8_t> b;
  template <typename T>
  Builder& put(T v) {
    uint8_t raw[sizeof(T)];
    std::memcpy(raw, &v, sizeof(T));
    b.insert(b.end(), raw, raw + sizeof(T));
    return *this;
  }
  Builder& str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Builder& header(uint32_t version, uint64_t tensors, uint64_t kvs) {
    b.insert(b.end(), {'G', 'G', 'U', 'F'});
    return put(version).put(tensors).put(kvs);
  }
  Builder& kv_u32(const std::string& k, uint32_t v) { return str(k).put<uint32_t>(4).put(v); }
  Builder& kv_str(const std::string& k, const std::string& v) { return str(k).put<uint32_t>(8).str(v); }
  Builder& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    str(name).put<uint32_t>(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) put(d);
    return put(type).put(offset);
  }
  Builder& pad(size_t align) {
    while (b.size() % align) b.push_back(0);
    return *this;
  }
};

std::string error_of(const std::vector<uint8_t>& bytes) {
  try {
    GGUFFile::parse(bytes.data(), bytes.size(), "t.gguf");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Gguf, EveryMetadataTypeAndTensorData) {
  Builder g;
  g.header(3, 2, 14);
  g.str("u8").put<uint32_t>(0).put<uint8_t>(200);
  g.str("i8").put<uint32_t>(1).put<int8_t>(-5);
  g.str("u16").put<uint32_t>(2).put<uint16_t>(60000);
  g.str("i16").put<uint32_t>(3).put<int16_t>(-30000);
  g.kv_u32("u32", 4000000000u);
  g.str("i32").put<uint32_t>(5).put<int32_t>(-2000000000);
  g.str("f32").put<uint32_t>(6).put<float>(0.25f);
  g.str("bool").put<uint32_t>(7).put<uint8_t>(1);
  g.kv_str("str", "héllo");
  g.str("arr").put<uint32_t>(9).put<uint32_t>(5).put<uint64_t>(3).put<int32_t>(-1).put<int32_t>(0).put<int32_t>(7);
  g.str("u64").put<uint32_t>(10).put<uint64_t>(1ull << 60);
  g.str("i64").put<uint32_t>(11).put<int64_t>(-(1ll << 60));
  g.str("f64").put<uint32_t>(12).put<double>(-1.5);
  g.str("general.alignment").put<uint32_t>(4).put<uint32_t>(64);
  g.tensor("a", {4, 2}, 0, 0).tensor("b", {32}, 8, 64);  // F32 [2,4], Q8_0 one block
  g.pad(64);
  for (int i = 0; i < 8; ++i) g.put<float>(static_cast<float>(i));
  g.pad(64);
  for (int i = 0; i < 34; ++i) g.put<uint8_t>(static_cast<uint8_t>(i));
  GGUFFile f = GGUFFile::parse(g.b.data(), g.b.size());
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.get_int("u8"), 200);
  EXPECT_EQ(f.get_int("i8"), -5);
  EXPECT_EQ(f.get_int("u16"), 60000);
  EXPECT_EQ(f.get_int("i16"), -30000);
  EXPECT_EQ(f.get_int("u32"), 4000000000ll);
  EXPECT_EQ(f.get_int("i32"), -2000000000);
  EXPECT_EQ(f.get_float("f32"), 0.25);
  EXPECT_TRUE(f.get_bool("bool"));
  EXPECT_EQ(f.get_string("str"), "héllo");
  auto arr = f.at("arr").as_array();
  ASSERT_EQ(arr.size(), 3u);
  EXPECT_EQ(arr[0].as_int(), -1);
  EXPECT_EQ(arr[2].as_int(), 7);
  EXPECT_EQ(f.at("arr").elem_type, GGUFValue::Type::I32);
  EXPECT_EQ(f.get_int("u64"), 1ll << 60);
  EXPECT_EQ(f.get_int("i64"), -(1ll << 60));
  EXPECT_EQ(f.get_float("f64"), -1.5);
  EXPECT_EQ(f.get_int("missing", 42), 42);
  EXPECT_THROW(f.get_int("missing"), Error);
  EXPECT_THROW(f.at("str").as_int(), Error);
  const GGUFTensor& a = f.need_tensor("a");
  EXPECT_EQ(a.ne, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(a.rows(), 2);
  EXPECT_EQ(a.nbytes, 32u);
  EXPECT_EQ(reinterpret_cast<const float*>(a.data)[5], 5.0f);
  EXPECT_EQ((a.data - g.b.data()) % 64, 0) << "tensor data starts at the next multiple of general.alignment";
  const GGUFTensor& b = f.need_tensor("b");
  EXPECT_EQ(b.nbytes, 34u);
  EXPECT_EQ(b.data[33], 33);
  EXPECT_EQ((b.data - a.data), 64);
  EXPECT_EQ(f.tensor("nope"), nullptr);
}

// Long arrays (a vocabulary) stay packed in the file's bytes; every way to read them gives the same elements, and a
// malformed element deep inside one still fails at parse time.
TEST(Gguf, LongArraysReadBackFromThePackedBytes) {
  auto build = [](bool break_one) {
    Builder g;
    g.header(3, 0, 2);
    g.str("words").put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(1000);
    for (int i = 0; i < 1000; ++i) g.str("w" + std::to_string(i));
    g.str("flags").put<uint32_t>(9).put<uint32_t>(7).put<uint64_t>(300);
    for (int i = 0; i < 300; ++i) g.put<uint8_t>(break_one && i == 250 ? 2 : i % 2);  // a bool of 2 is malformed
    return g.b;
  };
  std::vector<uint8_t> bytes = build(false);
  GGUFFile f = GGUFFile::parse(bytes.data(), bytes.size());
  const GGUFValue& words = f.at("words");
  ASSERT_EQ(words.array_size(), 1000u);
  std::vector<std::string> seen;
  words.for_each_element([&](const GGUFValue& w) { seen.push_back(w.as_string()); });
  ASSERT_EQ(seen.size(), 1000u);
  EXPECT_EQ(seen[0], "w0");
  EXPECT_EQ(seen[999], "w999");
  auto flags = f.at("flags").as_array();
  ASSERT_EQ(flags.size(), 300u);
  EXPECT_FALSE(flags[0].as_bool());
  EXPECT_TRUE(flags[299].as_bool());
  EXPECT_EQ(words.str(), "[\"w0\", \"w1\", \"w2\", \"w3\", ... (1000 items)]");
  EXPECT_THAT(error_of(build(true)), ::testing::HasSubstr("bool value 2 is neither 0 nor 1"));
}

TEST(Gguf, MalformedFilesGiveOneClearError) {
  auto valid = [] {
    Builder g;
    g.header(3, 1, 1).kv_str("general.architecture", "llama").tensor("w", {32, 2}, 0, 0).pad(32);
    for (int i = 0; i < 64; ++i) g.put<float>(1.0f);
    return g.b;
  };
  ASSERT_EQ(error_of(valid()), "");
  EXPECT_NE(error_of({'G', 'G', 'U'}).find("truncated file"), std::string::npos);
  std::vector<uint8_t> notgguf = valid();
  notgguf[0] = 'X';
  EXPECT_NE(error_of(notgguf).find("not a GGUF file"), std::string::npos);
  std::vector<uint8_t> v9 = valid();
  v9[4] = 9;
  EXPECT_NE(error_of(v9).find("GGUF version 9 (supported: 2, 3)"), std::string::npos);
  // every truncation of a valid file is an error, never a crash
  std::vector<uint8_t> full = valid();
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<ptrdiff_t>(n));
    EXPECT_NE(error_of(cut), "") << "truncated to " << n << " bytes";
  }
  Builder absurd;
  absurd.header(3, 1ull << 40, 0);
  EXPECT_NE(error_of(absurd.b).find("tensor count 1099511627776 is absurd"), std::string::npos);
  Builder bigstr;
  bigstr.header(3, 0, 1).put<uint64_t>(1ull << 62);
  EXPECT_NE(error_of(bigstr.b).find("metadata key claims"), std::string::npos);
  Builder badtype;
  badtype.header(3, 0, 1).str("k").put<uint32_t>(77).put<uint32_t>(0);
  EXPECT_NE(error_of(badtype.b).find("unknown value type 77"), std::string::npos);
  Builder bigarr;
  bigarr.header(3, 0, 1).str("k").put<uint32_t>(9).put<uint32_t>(4).put<uint64_t>(1ull << 50);
  EXPECT_NE(error_of(bigarr.b).find("array claims"), std::string::npos);
  Builder ttype;
  ttype.header(3, 1, 0).tensor("w", {32}, 99, 0).pad(32);
  EXPECT_NE(error_of(ttype.b).find("tensor 'w' has unknown type 99"), std::string::npos);
  Builder past;
  past.header(3, 1, 0).tensor("w", {32}, 0, 1 << 20).pad(32);
  EXPECT_NE(error_of(past.b).find("lies past the end of the file"), std::string::npos);
  Builder rowblk;
  rowblk.header(3, 1, 0).tensor("w", {33}, 8, 0).pad(32);
  EXPECT_NE(error_of(rowblk.b).find("not a multiple of Q8_0's block of 32"), std::string::npos);
  Builder align;
  align.header(3, 0, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(48);
  EXPECT_NE(error_of(align.b).find("not a power of two"), std::string::npos);
  Builder small;
  small.header(3, 0, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(2);
  EXPECT_NE(error_of(small.b).find("of at least 8"), std::string::npos);
  Builder dup;
  dup.header(3, 2, 0).tensor("w", {32}, 0, 0).tensor("w", {32}, 0, 128).pad(32);
  dup.b.resize(dup.b.size() + 256);
  EXPECT_NE(error_of(dup.b).find("appears twice"), std::string::npos);
}

TEST(Gguf, RandomCorruptionNeverCrashes) {
  uint32_t seed = std::random_device{}();
  std::cout << "corruption seed=" << seed << "\n";
  std::mt19937 rng(seed);
  Builder g;
  g.header(3, 1, 2)
      .kv_str("general.architecture", "llama")
      .str("a")
      .put<uint32_t>(9)
      .put<uint32_t>(8)
      .put<uint64_t>(2)
      .str("x")
      .str("yz");
  g.tensor("w", {32, 2}, 8, 0).pad(32);
  g.b.resize(g.b.size() + 68);
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> m = g.b;
    for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k) m[rng() % m.size()] = static_cast<uint8_t>(rng());
    try {
      GGUFFile f = GGUFFile::parse(m.data(), m.size());
      for (const auto& t : f.tensors()) ASSERT_LE(t.data + t.nbytes, m.data() + m.size());
    } catch (const Error&) {}
  }
}

std::string write_file(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  return path;
}

TEST(Gguf, SplitFilesOpenAsOne) {
  std::string dir = ::testing::TempDir();
  for (int part = 1; part <= 3; ++part) {
    Builder g;
    g.header(3, 1, part == 1 ? 3 : 2).str("split.no").put<uint32_t>(2).put<uint16_t>(static_cast<uint16_t>(part - 1));
    g.str("split.count").put<uint32_t>(2).put<uint16_t>(3);
    if (part == 1) g.str("split.tensors.count").put<uint32_t>(5).put<int32_t>(3);
    g.tensor("t" + std::to_string(part), {8}, 0, 0).pad(32);
    for (int i = 0; i < 8; ++i) g.put<float>(static_cast<float>(part * 10 + i));
    char name[64];
    std::snprintf(name, sizeof name, "m-%05d-of-00003.gguf", part);
    write_file(dir + name, g.b);
  }
  GGUFFile f = GGUFFile::open(dir + "m-00001-of-00003.gguf");
  ASSERT_EQ(f.tensors().size(), 3u);
  EXPECT_EQ(reinterpret_cast<const float*>(f.need_tensor("t3").data)[2], 32.0f);
  EXPECT_EQ(reinterpret_cast<const float*>(f.need_tensor("t1").data)[0], 10.0f);
  std::remove((dir + "m-00003-of-00003.gguf").c_str());
  try {
    GGUFFile::open(dir + "m-00001-of-00003.gguf");
    FAIL() << "a missing part was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("m-00003-of-00003.gguf"), std::string::npos) << e.what();
  }
  EXPECT_THROW(GGUFFile::open(dir + "no-such-file.gguf"), Error);
}

// The real models' metadata and tensor table agree with the PyPI gguf package's reader.
TEST(Gguf, RealModelsMatchGgufPy) {
  for (const char* which : {"gemma", "smollm"}) {
    std::string script = std::string(TG_LLM_TEST_DIR) + "/model_paths.py";
    std::string cmd = std::string(TG_PYTHON) + " " + script + " " + which;
    FILE* p = popen(cmd.c_str(), "r");
    char buf[4096] = {};
    std::string path = p && std::fgets(buf, sizeof buf, p) ? std::string(buf) : "";
    if (p) pclose(p);
    while (!path.empty() && (path.back() == '\n')) path.pop_back();
    if (path.empty()) GTEST_SKIP() << "model " << which << " is not installed (scripts/setup.sh installs it)";
    GGUFFile f = GGUFFile::open(path);
    std::string summary = std::string(TG_PYTHON) + " " + script + " " + which + " --summary";
    p = popen(summary.c_str(), "r");
    std::string want;
    while (p && std::fgets(buf, sizeof buf, p)) want += buf;
    if (p) pclose(p);
    std::string got = std::to_string(f.metadata().size()) + " " + std::to_string(f.tensors().size()) + "\n";
    for (const auto& t : f.tensors()) {
      got += t.name + " " + type_name(t.type);
      for (int64_t d : t.ne) got += " " + std::to_string(d);
      got += " " + std::to_string(t.data - f.tensors()[0].data) + "\n";
    }
    EXPECT_EQ(got, want) << which;
  }
}

}  // namespace
}  // namespace tg::llm
