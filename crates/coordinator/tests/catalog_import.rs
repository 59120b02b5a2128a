//! A data directory from before the metadata service kept its catalog on the datanode:
//! the first start moves it into the service (`LiveCatalog::import_datanode_catalog`).

use coordinator::{Coordinator, CoordinatorConfig};
use sql::catalog::{ColumnDef, DataTypeDef, Distribution, TableDef};
use std::time::Duration;

fn config(dir: &std::path::Path) -> CoordinatorConfig {
    CoordinatorConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        unix_socket_dir: None,
        data_dir: dir.to_path_buf(),
        cache_size: 16 << 20,
        query_memory: 16 << 20,
        txn_memory: 16 << 20,
        synchronous_commit: true,
        gtm: None,
        session_threads: 1,
        busy_poll: Duration::ZERO,
        datanode_messages: false,
        cluster: None,
        access: Default::default(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_kept_on_the_datanode_moves_to_the_metadata_service() {
    let dir = tempfile::tempdir().unwrap();
    let table = {
        let dn =
            datanode::Datanode::open(datanode::DatanodeOptions::new(dir.path().join("datanode")))
                .unwrap();
        let table = TableDef {
            oid: 16384,
            name: "kept".into(),
            columns: vec![ColumnDef {
                name: "x".into(),
                ty: DataTypeDef {
                    oid: 23,
                    typmod: -1,
                },
                not_null: false,
                default: None,
                comment: None,
            }],
            primary_key: None,
            pk_name: None,
            pk_index_oid: None,
            rel: dn.create_rel().unwrap(),
            fillfactor: None,
            distribution: Distribution::RoundRobin,
            indexes: Vec::new(),
            acl: None,
            comment: None,
            checks: Vec::new(),
            foreign_keys: Vec::new(),
            owner: 10,
        };
        let json = serde_json::to_vec(&table).unwrap();
        dn.meta_put(b"catalog/table/0000016384", Some(&json))
            .unwrap();
        dn.meta_put(b"catalog/next_oid", Some(b"16387")).unwrap();
        table
    };
    let coordinator = Coordinator::start(config(dir.path())).await.unwrap();
    let store = meta::MetaStore::open(&dir.path().join("gtm")).unwrap();
    let tables = store.scan(b"catalog/table/").entries;
    assert_eq!(tables.len(), 1);
    let moved: TableDef = serde_json::from_slice(&tables[0].1).unwrap();
    assert_eq!(
        (moved.oid, moved.name.as_str(), moved.rel),
        (16384, "kept", table.rel)
    );
    assert_eq!(
        store.scan(b"catalog/next_oid").entries[0].1,
        16387u64.to_le_bytes().to_vec(),
        "the next OID is the metadata service's counter now"
    );
    assert_eq!(
        store.scan(b"catalog/name/kept").entries[0].1,
        16384u32.to_le_bytes().to_vec()
    );
    drop(coordinator);
}
