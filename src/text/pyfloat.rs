//! Python's `repr(float)` / `str(float)` in Rust.
//!
//! WebShop shows prices with f-strings (`f"${price}"`), so the shown text is Python's float repr:
//! the shortest digit string that round-trips, `1299.0` (never `1299`), and exponent form `1e-05` /
//! `1e+16` outside the decimal-point positions Python prints in fixed notation.

/// Formats `x` exactly as Python 3's `repr(x)` does.
///
/// Rust's `{:e}` already yields the shortest round-trip digits (the same digits as Python's
/// `float_repr_style = 'short'`), so only the layout differs: Python writes fixed notation when
/// the scientific exponent `e` satisfies `-4 <= e < 16`, else `d.ddde±XX` with at least two
/// exponent digits and no `.0` on a one-digit mantissa.
pub fn repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    // `{:e}` always prints a decimal exponent; a parse failure here would be a std bug, and 0 keeps
    // the output sane rather than panicking.
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();

    if (-4..16).contains(&exp) {
        let mut out = String::from(sign);
        if exp < 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(&digits);
        } else {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', int_len - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        }
        out
    } else {
        let exp_sign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{exp_sign}{:02}", exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::repr;

    #[test]
    fn known_values() {
        let cases: &[(f64, &str)] = &[
            (1299.0, "1299.0"),
            (19.99, "19.99"),
            (100.0, "100.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (0.1, "0.1"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.2345e20, "1.2345e+20"),
            (-3.25, "-3.25"),
            (1e300, "1e+300"),
            (f64::INFINITY, "inf"),
            (f64::NAN, "nan"),
            (0.1 + 0.2, "0.30000000000000004"),
        ];
        for (x, want) in cases {
            assert_eq!(repr(*x), *want, "repr({x:?})");
        }
    }
}
