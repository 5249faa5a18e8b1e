// A small reader of AMDGPU code objects for the AMD plugin's tests, written from the ELF-64 specification and LLVM's
// AMDGPUUsage document ("Kernel Descriptor"), independently of the plugin: the ELF header, section headers, .symtab
// and .strtab, and the 64-byte kernel descriptor the `<kernel>.kd` symbol names.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace tg::test::amdgpu {

constexpr uint16_t kEmAmdgpu = 224;           // e_machine
constexpr uint8_t kOsAbiAmdgpuHsa = 64;       // e_ident[EI_OSABI]
constexpr uint32_t kEfAmdgpuMachMask = 0xff;  // e_flags: EF_AMDGPU_MACH
constexpr uint32_t kMachGfx942 = 0x04c, kMachGfx1100 = 0x041;
constexpr uint16_t kEnableWavefrontSize32 = 1u << 10;  // kernel_code_properties bit 10

// The kernel descriptor (AMDGPUUsage, "Kernel Descriptor for GFX6-GFX12"), the fields the tests read.
struct KernelDescriptor {
  uint32_t group_segment_fixed_size;              // @0: LDS bytes
  uint32_t private_segment_fixed_size;            // @4: scratch bytes per work-item
  uint32_t kernarg_size;                          // @8
  int64_t kernel_code_entry_byte_offset;          // @16
  uint32_t compute_pgm_rsrc1, compute_pgm_rsrc2;  // @48, @52
  uint16_t kernel_code_properties;                // @56
};

struct CodeObject {
  uint16_t machine = 0;
  uint8_t os_abi = 0;
  uint32_t flags = 0;
  std::vector<std::string> symbols;  // every .symtab name, in table order
  std::optional<KernelDescriptor> descriptor;
};

namespace detail {
template <class T>
T read(const std::vector<unsigned char>& b, uint64_t at) {
  T v{};
  if (at + sizeof(T) <= b.size()) std::memcpy(&v, b.data() + at, sizeof(T));
  return v;
}
}  // namespace detail

// Parses `bytes`; `error` says what is malformed ("" when nothing is). The descriptor is the one of `kernel`.
inline CodeObject read_code_object(const std::vector<unsigned char>& bytes, const std::string& kernel,
                                   std::string& error) {
  using detail::read;
  CodeObject out;
  error.clear();
  if (bytes.size() < 64 ||
      std::memcmp(bytes.data(),
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      bytes[4] != 2 /* ELFCLASS64 */) {
    error = "not an ELF-64 file";
    return out;
  }
  out.os_abi = bytes[7];
  out.machine = read<uint16_t>(bytes, 0x12);
  out.flags = read<uint32_t>(bytes, 0x30);
  const uint64_t shoff = read<uint64_t>(bytes, 0x28);
  const uint16_t shentsize = read<uint16_t>(bytes, 0x3a), shnum = read<uint16_t>(bytes, 0x3c);
  if (shentsize != 64 || shoff + uint64_t{shnum} * 64 > bytes.size()) {
    error = "section header table out of the file";
    return out;
  }
  struct Section {
    uint32_t type, link;
    uint64_t addr, offset, size;
  };
  std::vector<Section> sections;
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint64_t at = shoff + uint64_t{i} * 64;
    sections.push_back({read<uint32_t>(bytes, at + 4), read<uint32_t>(bytes, at + 40), read<uint64_t>(bytes, at + 16),
                        read<uint64_t>(bytes, at + 24), read<uint64_t>(bytes, at + 32)});
  }
  for (const Section& symtab : sections) {
    if (symtab.type != 2 /* SHT_SYMTAB */) continue;
    if (symtab.link >= sections.size() || symtab.offset + symtab.size > bytes.size()) {
      error = ".symtab out of the file";
      return out;
    }
    const Section& strtab = sections[symtab.link];
    for (uint64_t at = symtab.offset; at + 24 <= symtab.offset + symtab.size; at += 24) {
      const uint32_t name_off = read<uint32_t>(bytes, at);
      const uint16_t shndx = read<uint16_t>(bytes, at + 6);
      const uint64_t value = read<uint64_t>(bytes, at + 8), size = read<uint64_t>(bytes, at + 16);
      std::string name;
      for (uint64_t c = strtab.offset + name_off; c < strtab.offset + strtab.size && c < bytes.size() && bytes[c]; ++c)
        name += static_cast<char>(bytes[c]);
      out.symbols.push_back(name);
      if (name != kernel + ".kd") continue;
      if (size != 64 || shndx >= sections.size() || value < sections[shndx].addr) {
        error = name + " is not a 64-byte object in a section";
        return out;
      }
      const uint64_t kd = sections[shndx].offset + (value - sections[shndx].addr);
      if (kd + 64 > bytes.size()) {
        error = name + " lies past the end of the file";
        return out;
      }
      out.descriptor = KernelDescriptor{read<uint32_t>(bytes, kd + 0),  read<uint32_t>(bytes, kd + 4),
                                        read<uint32_t>(bytes, kd + 8),  read<int64_t>(bytes, kd + 16),
                                        read<uint32_t>(bytes, kd + 48), read<uint32_t>(bytes, kd + 52),
                                        read<uint16_t>(bytes, kd + 56)};
    }
  }
  if (!out.descriptor) error = "no symbol " + kernel + ".kd";
  return out;
}

}  // namespace tg::test::amdgpu
