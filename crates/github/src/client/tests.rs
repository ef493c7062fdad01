//! The client's thread-safety bounds.

#[test]
fn the_client_is_clone_send_sync_and_its_futures_are_send() {
    fn assert_traits<T: Clone + Send + Sync + 'static>() {}
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    fn assert_send<T: Send>(_: &T) {}
    assert_traits::<crate::Client>();
    assert_send_sync::<crate::Error>();
    let client = crate::Client::new(crate::ClientConfig::new(
        crate::ConfigUrl::parse("http://127.0.0.1:1/org").unwrap(),
        crate::Credentials::pat("p"),
    ))
    .unwrap();
    let mut session = crate::Session::default();
    assert_send(&client.get_message(&mut session, crate::MessageId(0), 1));
    assert_send(&client.get_scale_set(crate::GithubScaleSetId(1)));
}
