//! Pagination of the list routes: `?limit=` (1 to [`MAX_PAGE_LIMIT`]; when absent, the
//! server's page size, [`crate::v1::DEFAULT_PAGE_LIMIT`] unless [`crate::Limits`] says
//! otherwise) and `?cursor=`, the `next_cursor` of the page before.
//!
//! A cursor is the sort key of the last item answered (with the list's name, so one list's
//! cursor is refused by another), as JSON in unpadded URL-safe base64: opaque to clients,
//! and it needs no server-side state. The next page is every item whose key sorts after it,
//! so an item created or deleted between two requests neither shifts the pages nor repeats
//! an item; one created before the cursor is not seen until the list is read again.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;

use crate::error::ApiError;
use crate::v1::MAX_PAGE_LIMIT;

/// The query of a list route that takes nothing but the page.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct PageQuery {
    /// How many items at most: 1 to 1000, 500 when absent.
    #[param(minimum = 1, maximum = 1000)]
    pub(crate) limit: Option<u32>,
    /// The `next_cursor` of the previous page, as it was answered; absent for the first page.
    pub(crate) cursor: Option<String>,
}

/// One page of `items` in the order of `key`, after `cursor`, at most `limit` long (`default`
/// when `None`); and the cursor of the page after it (`None` when this page is the last).
/// `list` names the list in the cursor (and in the message refusing one that is not this
/// list's).
pub(crate) fn page<T>(
    list: &str,
    items: Vec<T>,
    key: impl Fn(&T) -> Vec<String>,
    (limit, default): (Option<u32>, u32),
    cursor: Option<&str>,
) -> Result<(Vec<T>, Option<String>), ApiError> {
    let default = default.clamp(1, MAX_PAGE_LIMIT);
    let limit = match limit {
        None => default,
        Some(n) if (1..=MAX_PAGE_LIMIT).contains(&n) => n,
        Some(n) => {
            return Err(ApiError::InvalidParameter {
                reason: format!(
                    "limit {n} is out of range: give 1 to {MAX_PAGE_LIMIT} \
                     ({default} when left out)"
                ),
            });
        }
    };
    let after = cursor.map(|c| decode(list, c)).transpose()?;
    let mut keyed: Vec<(Vec<String>, T)> = items.into_iter().map(|i| (key(&i), i)).collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    let mut rest = keyed
        .into_iter()
        .filter(|(k, _)| after.as_ref().is_none_or(|after| k > after))
        .peekable();
    let mut taken = Vec::new();
    let mut last_key = None;
    for (k, item) in rest
        .by_ref()
        .take(usize::try_from(limit).unwrap_or(usize::MAX))
    {
        taken.push(item);
        last_key = Some(k);
    }
    let next = match (rest.peek(), last_key) {
        (Some(_), Some(k)) => Some(encode(list, k)),
        _ => None,
    };
    Ok((taken, next))
}

fn encode(list: &str, key: Vec<String>) -> String {
    let mut whole = Vec::with_capacity(key.len() + 1);
    whole.push(list.to_owned());
    whole.extend(key);
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&whole).unwrap_or_default())
}

fn decode(list: &str, cursor: &str) -> Result<Vec<String>, ApiError> {
    let refused = || ApiError::InvalidParameter {
        reason: format!(
            "cursor {cursor:?} is not one this server answered for the {list} list: pass a \
             `next_cursor` exactly as it was answered, or leave `cursor` out to start from \
             the first page"
        ),
    };
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| refused())?;
    let mut whole: Vec<String> = serde_json::from_slice(&bytes).map_err(|_| refused())?;
    if whole.first().map(String::as_str) != Some(list) {
        return Err(refused());
    }
    whole.remove(0);
    Ok(whole)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page of `items` keyed by their decimal text, with the default page size `default`.
    fn of(
        items: Vec<u32>,
        (limit, default): (Option<u32>, u32),
        cursor: Option<&str>,
    ) -> Result<(Vec<u32>, Option<String>), ApiError> {
        page(
            "numbers",
            items,
            |n| vec![format!("{n:03}")],
            (limit, default),
            cursor,
        )
    }

    fn numbers(limit: Option<u32>, cursor: Option<&str>) -> (Vec<u32>, Option<String>) {
        of((1..=5).rev().collect(), (limit, 500), cursor).expect("a page")
    }

    #[test]
    fn pages_follow_each_other_in_key_order_until_the_last_has_no_cursor() {
        let (first, next) = numbers(Some(2), None);
        assert_eq!(first, [1, 2]);
        let (second, next) = numbers(Some(2), next.as_deref());
        assert_eq!(second, [3, 4]);
        let (third, next) = numbers(Some(2), next.as_deref());
        assert_eq!(third, [5]);
        assert_eq!(next, None);
    }

    #[test]
    fn without_a_limit_the_page_is_the_default_size() {
        let (first, next) = of(vec![3, 1, 2], (None, 2), None).expect("a page");
        assert_eq!(first, [1, 2]);
        assert!(next.is_some());
    }

    #[test]
    fn a_page_that_ends_exactly_at_the_end_has_no_cursor() {
        assert_eq!(numbers(Some(5), None), (vec![1, 2, 3, 4, 5], None));
        assert_eq!(numbers(None, None), (vec![1, 2, 3, 4, 5], None));
    }

    #[test]
    fn a_limit_out_of_range_and_a_foreign_cursor_are_refused() {
        for limit in [0, MAX_PAGE_LIMIT + 1] {
            assert!(of(vec![1], (Some(limit), 500), None).is_err(), "{limit}");
        }
        assert!(of(vec![1], (Some(MAX_PAGE_LIMIT), 500), None).is_ok());
        let (_, Some(other)) = page(
            "other",
            vec![1, 2],
            |n: &u32| vec![n.to_string()],
            (Some(1), 500),
            None,
        )
        .expect("a page") else {
            panic!("two items at limit 1 leave a next page");
        };
        assert!(of(vec![1, 2], (None, 500), Some(&other)).is_err());
        assert!(of(vec![1], (None, 500), Some("not base64!")).is_err());
    }
}
