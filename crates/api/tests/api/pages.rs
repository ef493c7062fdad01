//! The list routes answer a page at a time (`limit`, `cursor`, `next_cursor`): following the
//! cursors reads the whole list, once, in order; a bad limit or cursor is a 400; and items
//! created or deleted between pages neither shift nor repeat the next page.

use std::time::Duration;

use scaleset_api::v1::{CredentialsList, EntityList, InstanceList, Paged, ScaleSetList, TokenList};
use scaleset_store::{
    Acquisition, ApiTokenStore as _, InstanceStore as _, LeaseStore as _, NewInstance, ScaleSetId,
};
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::helpers::{App, Backend, backend_tests};

/// One page of `path` (which holds its query already, or not), typed.
async fn page<T: DeserializeOwned>(app: &App, path: &str, query: &str) -> T {
    let separator = if path.contains('?') { '&' } else { '?' };
    let url = if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}{separator}{query}")
    };
    let answer = app.call("GET", &url, None).await;
    assert_eq!(answer.status, 200, "GET {url}: {answer:?}");
    serde_json::from_value(answer.json.clone())
        .unwrap_or_else(|e| panic!("GET {url} is not the typed list: {e}: {answer:?}"))
}

/// Every page of `path` at `limit` a page, following `next_cursor`: the pages and their
/// number.
async fn every_page<T: DeserializeOwned + Paged>(app: &App, path: &str, limit: u32) -> (T, usize) {
    let mut all: T = page(app, path, &format!("limit={limit}")).await;
    let mut pages = 1;
    while let Some(cursor) = all.next_cursor().map(str::to_owned) {
        let next: T = page(app, path, &format!("limit={limit}&cursor={cursor}")).await;
        all.append(next);
        pages += 1;
        assert!(pages < 20, "GET {path} does not end");
    }
    (all, pages)
}

async fn seed_entity(app: &App, credentials: &str, name: &str) -> String {
    let entity = app
        .call(
            "POST",
            "/api/v1/entities",
            Some(json!({"kind": "organization", "name": name, "credentials": credentials})),
        )
        .await;
    assert_eq!(entity.status, 201, "{entity:?}");
    entity.json["id"].as_str().expect("an id").to_owned()
}

async fn seed_credentials(app: &App, name: &str) -> String {
    let created = app
        .call(
            "POST",
            "/api/v1/credentials",
            Some(json!({"name": name, "auth": {"kind": "pat", "token": "ghp_x"}})),
        )
        .await;
    assert_eq!(created.status, 201, "{created:?}");
    created.json["id"].as_str().expect("an id").to_owned()
}

async fn seed_scale_set(app: &App, entity: &str, name: &str) -> String {
    let created = app
        .call(
            "POST",
            "/api/v1/scale-sets",
            Some(json!({"entity_id": entity, "name": name, "provider": "fake", "max_runners": 1})),
        )
        .await;
    assert_eq!(created.status, 201, "{created:?}");
    created.json["id"].as_str().expect("an id").to_owned()
}

async fn every_list_longer_than_a_page_is_read_whole_by_following_next_cursor(backend: Backend) {
    let app = App::start(
        backend,
        "every_list_longer_than_a_page_is_read_whole_by_following_next_cursor",
    )
    .await;
    seed_credentials(&app, "main").await;
    seed_credentials(&app, "spare").await;
    seed_credentials(&app, "third").await;
    let acme = seed_entity(&app, "main", "acme").await;
    let other = seed_entity(&app, "main", "other").await;
    let names = ["echo", "alpha", "delta", "bravo", "charlie"];
    let mut first = None;
    for name in names {
        let id = seed_scale_set(&app, &acme, name).await;
        first.get_or_insert(id);
    }
    seed_scale_set(&app, &other, "zulu").await;

    // Scale sets: six at two a page is three pages, in name order, each once.
    let (sets, pages) = every_page::<ScaleSetList>(&app, "/api/v1/scale-sets", 2).await;
    let listed: Vec<&str> = sets.items.iter().map(|s| s.spec.name.as_str()).collect();
    assert_eq!(
        listed,
        ["alpha", "bravo", "charlie", "delta", "echo", "zulu"]
    );
    assert_eq!(pages, 3);
    assert_eq!(sets.next_cursor, None);
    let whole: ScaleSetList = page(&app, "/api/v1/scale-sets", "").await;
    assert_eq!(
        whole.items, sets.items,
        "the default page is the whole of a short list"
    );
    assert_eq!(whole.next_cursor, None);
    // The count of undeclared sets is the whole list's on every page, not the page's.
    let one: ScaleSetList = page(&app, "/api/v1/scale-sets", "limit=1").await;
    assert_eq!((one.items.len(), one.not_declared), (1, 6));
    assert!(one.next_cursor.is_some());

    // The entity filter pages too, and its cursor stays within the entity.
    let (acme_sets, pages) =
        every_page::<ScaleSetList>(&app, &format!("/api/v1/scale-sets?entity_id={acme}"), 4).await;
    assert_eq!(acme_sets.items.len(), 5);
    assert_eq!(pages, 2);
    assert!(
        acme_sets
            .items
            .iter()
            .all(|s| s.entity_id.to_string() == acme)
    );

    // Instances, of every set and of one.
    let set = ScaleSetId(first.expect("a set").parse().expect("a UUID"));
    let Acquisition::Acquired(lease) = app
        .store
        .acquire_lease(set, "test-worker", Duration::from_secs(60))
        .await
        .expect("acquire")
    else {
        panic!("the lease is free");
    };
    for name in ["echo-3", "echo-1", "echo-2"] {
        app.store
            .create_instance(&lease, NewInstance::pending(name, "pool", None))
            .await
            .expect("an instance");
    }
    for path in [
        "/api/v1/instances".to_owned(),
        format!("/api/v1/scale-sets/{}/instances", set.0),
    ] {
        let (instances, pages) = every_page::<InstanceList>(&app, &path, 2).await;
        let listed: Vec<&str> = instances.items.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(listed, ["echo-1", "echo-2", "echo-3"], "{path}");
        assert_eq!(pages, 2, "{path}");
    }

    // Entities, credentials and tokens.
    let (entities, pages) = every_page::<EntityList>(&app, "/api/v1/entities", 1).await;
    let listed: Vec<&str> = entities.items.iter().map(|e| e.name.as_str()).collect();
    assert_eq!((listed, pages), (vec!["acme", "other"], 2));
    let (credentials, pages) = every_page::<CredentialsList>(&app, "/api/v1/credentials", 2).await;
    let listed: Vec<&str> = credentials.items.iter().map(|c| c.name.as_str()).collect();
    assert_eq!((listed, pages), (vec!["main", "spare", "third"], 2));
    app.store
        .create_api_token("another")
        .await
        .expect("a token");
    let (tokens, pages) = every_page::<TokenList>(&app, "/api/v1/tokens", 1).await;
    let listed: Vec<&str> = tokens.items.iter().map(|t| t.name.as_str()).collect();
    assert_eq!((listed, pages), (vec!["another", "test"], 2));
}

async fn a_limit_out_of_range_or_a_cursor_the_server_did_not_answer_is_refused(backend: Backend) {
    let app = App::start(
        backend,
        "a_limit_out_of_range_or_a_cursor_the_server_did_not_answer_is_refused",
    )
    .await;
    seed_credentials(&app, "one").await;
    seed_credentials(&app, "two").await;
    for query in [
        "limit=0",
        "limit=1001",
        "limit=-1",
        "limit=many",
        "cursor=not-a-cursor",
        "page=2",
    ] {
        let message = app
            .call("GET", &format!("/api/v1/credentials?{query}"), None)
            .await
            .error(400, "invalid_parameter")
            .to_owned();
        assert!(!message.is_empty(), "{query}");
    }
    let most: CredentialsList = page(&app, "/api/v1/credentials", "limit=1000").await;
    assert_eq!(most.items.len(), 2);
    // A cursor of one list is not another's.
    let first: CredentialsList = page(&app, "/api/v1/credentials", "limit=1").await;
    let cursor = first.next_cursor.expect("two credentials at one a page");
    let message = app
        .call("GET", &format!("/api/v1/tokens?cursor={cursor}"), None)
        .await
        .error(400, "invalid_parameter")
        .to_owned();
    assert!(
        message.contains("cursor") && message.contains("leave `cursor` out"),
        "{message}"
    );
}

async fn items_created_or_deleted_between_pages_do_not_shift_the_next_page(backend: Backend) {
    let app = App::start(
        backend,
        "items_created_or_deleted_between_pages_do_not_shift_the_next_page",
    )
    .await;
    let mut ids = Vec::new();
    for name in ["b", "c", "d", "e"] {
        ids.push(seed_credentials(&app, name).await);
    }
    let first: CredentialsList = page(&app, "/api/v1/credentials", "limit=2").await;
    let cursor = first.next_cursor.expect("four at two a page");
    // One created before the cursor and the last one of the first page deleted.
    seed_credentials(&app, "a").await;
    let deleted = app
        .call("DELETE", &format!("/api/v1/credentials/{}", ids[1]), None)
        .await;
    assert_eq!(deleted.status, 204);
    let second: CredentialsList = page(
        &app,
        "/api/v1/credentials",
        &format!("limit=2&cursor={cursor}"),
    )
    .await;
    let listed: Vec<&str> = second.items.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(listed, ["d", "e"]);
    assert_eq!(second.next_cursor, None);
}

backend_tests!(
    every_list_longer_than_a_page_is_read_whole_by_following_next_cursor,
    a_limit_out_of_range_or_a_cursor_the_server_did_not_answer_is_refused,
    items_created_or_deleted_between_pages_do_not_shift_the_next_page,
);
