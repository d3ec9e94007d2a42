//! The exact paired comparison of two sweeps over the same seeds.
//!
//! A seed draws the same latencies and faults in both sweeps, so each seed is a pair: it
//! passed or not before, and passed or not after. Only the discordant pairs say anything
//! about the change: `b` seeds that passed before and fail after, `c` seeds that failed
//! before and pass after. Under "the change made no difference" each discordant seed is
//! equally likely to go either way, so `min(b, c)` follows Binomial(b + c, 1/2): the exact
//! McNemar test, which is the sign test on the discordant pairs. The two-sided p-value is
//!
//! ```text
//! p = min(1, 2 · Σ_{i=0}^{min(b,c)} C(b+c, i) / 2^(b+c))
//! ```
//!
//! computed here as an exact fraction of big integers (the numerator over `2^(b+c−1)`), so
//! no float decides anything: the significance call compares integers, and the decimal is
//! only for display.

use num_bigint::BigUint;
use serde::{Deserialize, Serialize};

/// The most discordant seeds the exact test sums over: the sum costs about
/// `(b+c)² / 128` word operations (well under a second at this size), and a sweep with more
/// discordant seeds than this has long since answered the question.
pub const DISCORDANT_EXACT_MAX: u64 = 100_000;

/// The significance level the verdict is taken at: 1/20.
const ALPHA_DENOMINATOR: u32 = 20;

/// What the paired test says about the change, at the 5 % level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shift {
    /// More seeds went from fail to pass than the other way, beyond chance.
    MoreRobust,
    /// More seeds went from pass to fail than the other way, beyond chance.
    LessRobust,
    /// The discordant seeds are within what chance gives.
    NoDifference,
}

impl Shift {
    /// Returns the direction as people read it.
    pub fn label(self) -> &'static str {
        match self {
            Shift::MoreRobust => "more robust",
            Shift::LessRobust => "less robust",
            Shift::NoDifference => "no significant difference",
        }
    }
}

/// The exact two-sided sign (McNemar) test on the discordant seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignTest {
    /// Seeds that passed before and do not pass after.
    pub b: u64,
    /// Seeds that did not pass before and pass after.
    pub c: u64,
    /// The p-value to four significant digits (`"0.03125"`, `"1.526e-5"`, `"1"`); `None`
    /// when `b + c` is over [`DISCORDANT_EXACT_MAX`].
    pub p_value: Option<String>,
    /// The p-value as a decimal, for machines (it may round to 0 when tiny).
    pub p_value_value: Option<f64>,
    /// What the test says at the 5 % level (decided on the exact fraction).
    pub direction: Shift,
}

/// Returns the exact sign test of `b` regressions against `c` fixes.
///
/// ```
/// use simtape_eval::paired::{sign_test, Shift};
/// // 0 regressions, 5 fixes: p = 2 · (1/32) = 1/16.
/// let test = sign_test(0, 5);
/// assert_eq!(test.p_value.as_deref(), Some("0.0625"));
/// assert_eq!(test.direction, Shift::NoDifference);
/// assert_eq!(sign_test(0, 6).direction, Shift::MoreRobust); // p = 1/32
/// ```
pub fn sign_test(b: u64, c: u64) -> SignTest {
    let n = b + c;
    let (p_value, p_value_value, significant) = if n == 0 {
        (Some("1".to_string()), Some(1.0), false)
    } else if n > DISCORDANT_EXACT_MAX {
        (None, None, false)
    } else {
        let (numerator, denominator) = two_sided_tail(n, b.min(c));
        let significant = numerator.clone() * ALPHA_DENOMINATOR < denominator;
        let (text, value) = decimal(&numerator, &denominator);
        (Some(text), Some(value), significant)
    };
    let direction = match (significant, b.cmp(&c)) {
        (true, std::cmp::Ordering::Less) => Shift::MoreRobust,
        (true, std::cmp::Ordering::Greater) => Shift::LessRobust,
        _ => Shift::NoDifference,
    };
    SignTest {
        b,
        c,
        p_value,
        p_value_value,
        direction,
    }
}

/// Returns the two-sided p-value as `(numerator, denominator)`, capped at 1: twice the lower
/// tail `Σ_{i ≤ m} C(n, i) / 2^n`, that is `Σ C(n, i) / 2^(n−1)`.
fn two_sided_tail(n: u64, m: u64) -> (BigUint, BigUint) {
    let mut term = BigUint::from(1u32);
    let mut sum = term.clone();
    for i in 0..m {
        // C(n, i+1) = C(n, i) · (n − i) / (i + 1), exact at every step.
        term = term * (n - i) / (i + 1);
        sum += &term;
    }
    let denominator = BigUint::from(1u32) << (n - 1);
    if sum >= denominator {
        (BigUint::from(1u32), BigUint::from(1u32))
    } else {
        (sum, denominator)
    }
}

/// Returns `numerator / denominator` (at most 1) to four significant digits, and as `f64`.
fn decimal(numerator: &BigUint, denominator: &BigUint) -> (String, f64) {
    if numerator == denominator {
        return ("1".to_string(), 1.0);
    }
    // 10^shift · p has at least four digits before the point: start from the bit lengths
    // (log10 2 < 0.30103) and correct by at most a step or two.
    let bits_short = denominator.bits().saturating_sub(numerator.bits());
    let mut shift = (bits_short * 30_103 / 100_000) as u32 + 3;
    let scaled = |shift: u32| numerator * BigUint::from(10u32).pow(shift) / denominator;
    let mut digits = scaled(shift);
    while digits < BigUint::from(1_000u32) {
        shift += 1;
        digits = scaled(shift);
    }
    while digits >= BigUint::from(10_000u32) {
        shift -= 1;
        digits = scaled(shift);
    }
    let digits = digits.to_string();
    // p = 0.d1d2d3d4 · 10^(4 − shift): plain decimals down to 1e-4, scientific below.
    let exponent = 3 - i64::from(shift);
    let text = if exponent >= -4 {
        let zeros = usize::try_from(-exponent - 1).expect("exponent < 0 since p < 1");
        let plain = format!("0.{}{digits}", "0".repeat(zeros));
        plain.trim_end_matches('0').to_string()
    } else {
        let (head, tail) = digits.split_at(1);
        let tail = tail.trim_end_matches('0');
        match tail.is_empty() {
            true => format!("{head}e{exponent}"),
            false => format!("{head}.{tail}e{exponent}"),
        }
    };
    let value = text.parse::<f64>().expect("a decimal we wrote parses");
    (text, value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p_values_match_hand_computed_binomial_tails() {
        // Goal: the exact test gives the textbook values, in both directions, and refuses
        // nothing small.
        assert_eq!(sign_test(0, 0).p_value.as_deref(), Some("1"));
        assert_eq!(sign_test(3, 3).p_value.as_deref(), Some("1"));
        // 1 vs 9: 2 · (1 + 10) / 1024 = 22/1024 = 0.021484375.
        let test = sign_test(1, 9);
        assert_eq!(test.p_value.as_deref(), Some("0.02148"));
        assert_eq!(test.direction, Shift::MoreRobust);
        assert_eq!(sign_test(9, 1).direction, Shift::LessRobust);
        // 0 vs 20: 2 / 2^20 = 1.9073486328125e-6.
        assert_eq!(sign_test(0, 20).p_value.as_deref(), Some("1.907e-6"));
        // 0 vs 5: exactly 1/16, not significant at 1/20.
        assert_eq!(sign_test(5, 0).direction, Shift::NoDifference);
        // 2 vs 10 of 12: 2 · (1 + 12 + 66) / 4096 = 158/4096 = 0.03857421875.
        assert_eq!(sign_test(2, 10).p_value.as_deref(), Some("0.03857"));
        let large = sign_test(400, 600);
        assert!(large.p_value_value.unwrap() < 1e-9, "{large:?}");
        assert_eq!(large.direction, Shift::MoreRobust);
        assert_eq!(sign_test(DISCORDANT_EXACT_MAX, 1).p_value, None);
    }
}
