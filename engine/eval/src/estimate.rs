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
}
