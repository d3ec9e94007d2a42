//! Exact pass@k and pass^k over n trials of which c passed, for every k in 1..=n:
//!
//! * pass@k = 1 − C(n−c, k) / C(n, k): the chance at least one of k trials passes (Chen et al.
//!   2021, the unbiased estimator, not the biased 1 − (1 − c/n)^k);
//! * pass^k = C(c, k) / C(n, k): the chance all k trials pass (τ-bench, Yao et al. 2024).
//!
//! Both are computed exactly as reduced fractions of `u128`s ([`Fraction`]); decimals appear
//! only when rendering. A seed sweep's seeds and `simtape mcp eval`'s world states are both
//! trials.

use serde::{Deserialize, Serialize};

/// The most trials for which every binomial here is exact whatever k: C(100, 50) is about
/// 1.0e29, far below 2^128. `simtape mcp eval` caps its states at this; a sweep, which may
/// have millions of seeds, keeps only the k that [`binomial_checked`] allows.
pub const TRIALS_EXACT_MAX: u64 = 100;

/// An exact non-negative fraction, always reduced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fraction {
    /// The numerator.
    pub numerator: u128,
    /// The denominator, never 0.
    pub denominator: u128,
}

impl Fraction {
    /// Returns `numerator / denominator` reduced. The denominator must not be 0.
    ///
    /// ```
    /// use simtape_eval::estimate::Fraction;
    /// assert_eq!(Fraction::new(10, 12).to_string(), "5/6");
    /// assert_eq!(Fraction::new(4, 4).to_string(), "1");
    /// ```
    pub fn new(numerator: u128, denominator: u128) -> Fraction {
        assert!(denominator > 0, "a fraction needs a non-zero denominator");
        let divisor = gcd(numerator, denominator);
        Fraction {
            numerator: numerator / divisor,
            denominator: denominator / divisor,
        }
    }

    /// Returns the value as a float, for display only.
    pub fn to_f64(self) -> f64 {
        self.numerator as f64 / self.denominator as f64
    }
}

impl std::fmt::Display for Fraction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.denominator == 1 {
            write!(f, "{}", self.numerator)
        } else {
            write!(f, "{}/{}", self.numerator, self.denominator)
        }
    }
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

/// Returns C(n, k) exactly (0 when k > n). Exact for n up to [`TRIALS_EXACT_MAX`]: each step
/// multiplies C(n, i) by n − i before dividing, and C(n, i)·n stays far below 2^128 there.
///
/// # Panics
/// When C(n, k) overflows `u128` (possible only past [`TRIALS_EXACT_MAX`]); a caller with
/// more trials keeps the k for which [`binomial_checked`] is `Some`.
///
/// ```
/// use simtape_eval::estimate::binomial;
/// assert_eq!(binomial(4, 2), 6);
/// assert_eq!(binomial(2, 3), 0);
/// ```
pub fn binomial(n: u64, k: u64) -> u128 {
    binomial_checked(n, k).expect("C(n, k) fits in u128 for n up to TRIALS_EXACT_MAX")
}

/// Returns C(n, k) exactly, or `None` when it (or a step towards it) overflows `u128`.
/// When `binomial_checked(n, k)` is `Some`, [`pass_at_k`] and [`pass_hat_k`] at `(n, c, k)`
/// are exact for every `c ≤ n`: their other binomials are smaller, step by step. Seed sweeps
/// use it to keep only the k whose estimates are exact.
///
/// ```
/// use simtape_eval::estimate::binomial_checked;
/// assert_eq!(binomial_checked(10_000, 10).is_some(), true);
/// assert_eq!(binomial_checked(1_000_000, 10), None);
/// ```
pub fn binomial_checked(n: u64, k: u64) -> Option<u128> {
    if k > n {
        return Some(0);
    }
    let k = k.min(n - k);
    let mut value: u128 = 1;
    for i in 0..k {
        value = value.checked_mul(u128::from(n - i))? / u128::from(i + 1);
    }
    Some(value)
}

/// Returns pass@k = 1 − C(n−c, k)/C(n, k).
///
/// ```
/// use simtape_eval::estimate::pass_at_k;
/// assert_eq!(pass_at_k(4, 2, 2).to_string(), "5/6");
/// ```
pub fn pass_at_k(n: u64, c: u64, k: u64) -> Fraction {
    let all = binomial(n, k);
    Fraction::new(all - binomial(n - c, k), all)
}

/// Returns pass^k = C(c, k)/C(n, k).
///
/// ```
/// use simtape_eval::estimate::pass_hat_k;
/// assert_eq!(pass_hat_k(4, 2, 2).to_string(), "1/6");
/// ```
pub fn pass_hat_k(n: u64, c: u64, k: u64) -> Fraction {
    Fraction::new(binomial(c, k), binomial(n, k))
}

/// One k's estimates, exact and as decimals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KRow {
    /// k.
    pub k: u64,
    /// pass@k as an exact fraction, e.g. `"5/6"`.
    pub pass_at_k: String,
    /// pass@k as a decimal.
    pub pass_at_k_value: f64,
    /// pass^k as an exact fraction.
    pub pass_hat_k: String,
    /// pass^k as a decimal.
    pub pass_hat_k_value: f64,
}

impl KRow {
    /// Returns pass@k and pass^k of `c` passes out of `n` trials at `k`.
    ///
    /// ```
    /// use simtape_eval::estimate::KRow;
    /// let row = KRow::new(4, 2, 2);
    /// assert_eq!((row.pass_at_k.as_str(), row.pass_hat_k.as_str()), ("5/6", "1/6"));
    /// ```
    pub fn new(n: u64, c: u64, k: u64) -> KRow {
        let (at, hat) = (pass_at_k(n, c, k), pass_hat_k(n, c, k));
        KRow {
            k,
            pass_at_k: at.to_string(),
            pass_at_k_value: at.to_f64(),
            pass_hat_k: hat.to_string(),
            pass_hat_k_value: hat.to_f64(),
        }
    }

    /// Returns pass@k and pass^k as table cells, each `exact = decimal` to four places.
    ///
    /// ```
    /// use simtape_eval::estimate::KRow;
    /// assert_eq!(KRow::new(4, 2, 2).cells(), ("5/6 = 0.8333".to_string(), "1/6 = 0.1667".to_string()));
    /// ```
    pub fn cells(&self) -> (String, String) {
        (
            format!("{} = {:.4}", self.pass_at_k, self.pass_at_k_value),
            format!("{} = {:.4}", self.pass_hat_k, self.pass_hat_k_value),
        )
    }
}

/// The z of a two-sided 95 % normal interval.
const Z_95: f64 = 1.959_963_984_540_054;

/// A 95 % confidence interval, as decimals in `[0, 1]`, for display: no behaviour depends on
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ConfidenceInterval {
    /// The lower bound.
    pub low: f64,
    /// The upper bound.
    pub high: f64,
}

impl ConfidenceInterval {
    /// Returns the Wilson score interval of the pass rate of `c` passes in `n` trials
    /// (`n > 0`): unlike the normal one it stays inside `[0, 1]` and is not empty at 0 or n
    /// passes, which sweeps often give. Only IEEE-exact operations (`+ − × ÷ √`), so the
    /// same counts give the same bits on every machine.
    ///
    /// ```
    /// use simtape_eval::estimate::ConfidenceInterval;
    /// let all = ConfidenceInterval::wilson(10, 10);
    /// assert_eq!(all.high, 1.0);
    /// assert!((all.low - 0.7225).abs() < 1e-4);
    /// ```
    pub fn wilson(n: u64, c: u64) -> ConfidenceInterval {
        assert!(
            n > 0 && c <= n,
            "an interval needs trials, and no more passes than trials"
        );
        let (all, none) = (c == n, c == 0);
        let (n, c) = (n as f64, c as f64);
        let rate = c / n;
        let z2 = Z_95 * Z_95;
        let scale = 1.0 + z2 / n;
        let center = (rate + z2 / (2.0 * n)) / scale;
        let half = Z_95 / scale * (rate * (1.0 - rate) / n + z2 / (4.0 * n * n)).sqrt();
        // At 0 or n passes the bound is 0 or 1 exactly; rounding would leave it a hair off.
        ConfidenceInterval {
            low: if none { 0.0 } else { (center - half).max(0.0) },
            high: if all { 1.0 } else { (center + half).min(1.0) },
        }
    }

    /// Returns the interval of pass^k that the pass rate's interval gives: each bound to the
    /// k-th power (pass^k of independent trials is p^k, increasing in p), by repeated
    /// multiplication so the bits are the same everywhere.
    ///
    /// ```
    /// use simtape_eval::estimate::ConfidenceInterval;
    /// let squared = ConfidenceInterval { low: 0.5, high: 0.9 }.power(2);
    /// assert_eq!((squared.low, squared.high), (0.25, 0.81));
    /// ```
    pub fn power(self, k: u64) -> ConfidenceInterval {
        let mut out = ConfidenceInterval {
            low: 1.0,
            high: 1.0,
        };
        for _ in 0..k.min(1 << 16) {
            out.low *= self.low;
            out.high *= self.high;
        }
        out
    }
}

impl std::fmt::Display for ConfidenceInterval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{:.4}, {:.4}]", self.low, self.high)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimators_match_hand_computed_values() {
        // Goal: the unbiased estimators give the textbook values, exactly.
        assert_eq!(pass_at_k(4, 2, 1), Fraction::new(1, 2));
        assert_eq!(pass_hat_k(4, 2, 1), Fraction::new(1, 2));
        assert_eq!(pass_at_k(4, 2, 3), Fraction::new(1, 1));
        assert_eq!(pass_hat_k(4, 2, 3), Fraction::new(0, 1));
        assert_eq!(pass_at_k(5, 0, 5), Fraction::new(0, 1));
        assert_eq!(pass_hat_k(5, 5, 5), Fraction::new(1, 1));
        // C(100, 50) is about 1.0e29: exact, no overflow at the cap.
        assert_eq!(
            binomial(TRIALS_EXACT_MAX, 50),
            100_891_344_545_564_193_334_812_497_256
        );
        assert_eq!(pass_hat_k(100, 99, 99), Fraction::new(1, 100));
    }

    #[test]
    fn wilson_intervals_match_published_values() {
        // Goal: the Wilson interval gives the textbook bounds (Newcombe 1998, table I:
        // 81/263 -> 0.2553..0.3662) and stays inside [0, 1] at the ends.
        let interval = ConfidenceInterval::wilson(263, 81);
        assert!((interval.low - 0.2553).abs() < 1e-4, "{interval}");
        assert!((interval.high - 0.3662).abs() < 1e-4, "{interval}");
        let none = ConfidenceInterval::wilson(29, 0);
        assert_eq!(none.low, 0.0);
        assert!((none.high - 0.1170).abs() < 1e-4, "{none}");
        assert_eq!(interval.power(1), interval);
    }
}
