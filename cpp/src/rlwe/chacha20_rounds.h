// ChaCha20's twenty rounds (RFC 8439 §2.3: ten column-then-diagonal double
// rounds) over a state of 16 words, written once for every width: W is a
// 32-bit word, or a vector holding the same word of several blocks, and
// `quarter_round` is that width's quarter round.
#pragma once

namespace ringfire::detail {

template <class W, class QuarterRound>
inline void chacha20_rounds(W x[16], QuarterRound quarter_round) {
  for (int r = 0; r < 10; ++r) {
    quarter_round(x[0], x[4], x[8], x[12]);
    quarter_round(x[1], x[5], x[9], x[13]);
    quarter_round(x[2], x[6], x[10], x[14]);
    quarter_round(x[3], x[7], x[11], x[15]);
    quarter_round(x[0], x[5], x[10], x[15]);
    quarter_round(x[1], x[6], x[11], x[12]);
    quarter_round(x[2], x[7], x[8], x[13]);
    quarter_round(x[3], x[4], x[9], x[14]);
  }
}

}  // namespace ringfire::detail
