#pragma once
// Internal to gguf/: GGUF's little-endian encoding of integers and floats, assembled
// byte by byte so the host's byte order does not matter.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace pagoda::gguf {

template <size_t N>
using UnsignedOfSize = std::conditional_t<
    N == 1, uint8_t,
    std::conditional_t<N == 2, uint16_t, std::conditional_t<N == 4, uint32_t, uint64_t>>>;

template <typename T>
concept LittleEndianScalar = std::is_arithmetic_v<T> && !std::is_same_v<T, bool> &&
                             (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8);

// The T encoded in the sizeof(T) bytes at `bytes`.
template <LittleEndianScalar T>
T load_little_endian(const uint8_t* bytes) {
  using Bits = UnsignedOfSize<sizeof(T)>;
  Bits bits = 0;
  for (size_t i = 0; i < sizeof(T); ++i) bits |= static_cast<Bits>(Bits{bytes[i]} << (8 * i));
  return std::bit_cast<T>(bits);
}

// Appends the sizeof(T) bytes encoding `value`.
template <LittleEndianScalar T>
void append_little_endian(std::vector<uint8_t>& out, T value) {
  const auto bits = std::bit_cast<UnsignedOfSize<sizeof(T)>>(value);
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<uint8_t>(bits >> (8 * i)));
}

}  // namespace pagoda::gguf
