//! Entities: round trip and constraints.

use scaleset_store::{
    CredentialStore as _, CredentialsId, EntityKind, EntityStore as _, NewEntity,
};

use crate::helpers::{TestDb, pat, store_tests};

store_tests!(entity_round_trip, entity_constraints_are_conflicts);

async fn entity_round_trip(db: TestDb) {
    let store = db.open().await;
    let creds = store.create_credentials(pat("main", "t")).await.unwrap();
    let kinds = [
        EntityKind::Repository {
            owner: "acme".into(),
            name: "widgets".into(),
        },
        EntityKind::Organization {
            name: "acme".into(),
        },
        EntityKind::Enterprise {
            slug: "acme-corp".into(),
        },
    ];
    let mut created = Vec::new();
    for kind in kinds {
        let entity = store
            .create_entity(NewEntity {
                kind: kind.clone(),
                credentials_id: creds.id,
            })
            .await
            .unwrap();
        assert_eq!(entity.kind, kind);
        assert_eq!(entity.credentials_id, creds.id);
        assert_eq!(store.get_entity(entity.id).await.unwrap(), entity);
        created.push(entity);
    }
    let mut listed = store.list_entities().await.unwrap();
    listed.sort_by_key(|e| e.id);
    created.sort_by_key(|e| e.id);
    assert_eq!(listed, created);
    store.delete_entity(created[0].id).await.unwrap();
    assert!(
        store
            .get_entity(created[0].id)
            .await
            .unwrap_err()
            .is_not_found()
    );
}

async fn entity_constraints_are_conflicts(db: TestDb) {
    let store = db.open().await;
    let creds = store.create_credentials(pat("main", "t")).await.unwrap();
    let new = NewEntity {
        kind: EntityKind::Organization {
            name: "acme".into(),
        },
        credentials_id: creds.id,
    };
    store.create_entity(new.clone()).await.unwrap();
    assert!(store.create_entity(new).await.unwrap_err().is_conflict());
    let orphan = NewEntity {
        kind: EntityKind::Organization {
            name: "other".into(),
        },
        credentials_id: CredentialsId::generate(),
    };
    assert!(store.create_entity(orphan).await.unwrap_err().is_conflict());
    let in_use = crate::helpers::scale_set(&store, "in-use").await;
    assert!(
        store
            .delete_entity(in_use.entity_id)
            .await
            .unwrap_err()
            .is_conflict()
    );
}
