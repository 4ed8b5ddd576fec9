//! A gateway's chats: started (planned for an agent and kept in the store),
//! looked up, ended and purged, and read back as the view a request
//! answers from (one view shared by chats with the same pins and loads).
//! Decides nothing about what a call may do; `gateway` and `gateway::call`
//! do.

use super::*;

impl Gateway {
    /// Starts a chat: plans and pins the roster of `agent` (the gateway's
    /// own when `None`) and keeps it under `id` (a new random id when
    /// `None`). Returns the id. A live chat under `id` is kept as it is, so
    /// several starting one id at once all get the one chat.
    ///
    /// # Errors
    /// The store's errors; the plan's usage errors (an agent the policy
    /// does not have included).
    pub fn open_chat(&self, id: Option<String>, agent: Option<&str>) -> Result<String, Error> {
        self.open_chat_for(id, agent, None)
    }

    /// [`Gateway::open_chat`] for the caller `owner` (a token's `sub`):
    /// the chat's document names it, and only it reaches the chat
    /// ([`Gateway::chat_owner`]).
    ///
    /// # Errors
    /// As [`Gateway::open_chat`].
    pub fn open_chat_for(
        &self,
        id: Option<String>,
        agent: Option<&str>,
        owner: Option<&str>,
    ) -> Result<String, Error> {
        let id = match id {
            Some(id) => id,
            None => crate::store::new_id()?,
        };
        if !session::is_session_id(&id) {
            return Err(Error::new(
                ErrorKind::Usage,
                Problem::new(format!("chat id {id:?} is not a session id")).help(
                    "give 1 to 64 letters, digits, `-` or `_`, or leave it out for a new one",
                ),
            ));
        }
        let g = self.current.load();
        let options = NewSession {
            caps: (None, None),
            names: NameSpelling::Provider,
            id: Some(id.clone()),
        };
        let mut selection = self.options.selection.clone();
        if let Some(agent) = agent {
            selection.agent = Some(agent.to_string());
            selection.version = None;
        }
        let mut doc = {
            let mut cache = g.cache.lock().unwrap_or_else(|e| e.into_inner());
            session::new(
                &g.inputs,
                &selection,
                &options,
                &self.options.keys,
                &mut cache,
            )?
        };
        if let Some(owner) = owner {
            doc.owner = Some(owner.to_string());
            self.options.keys.sign(&mut doc);
        }
        let stored = Stored {
            document: session::to_json_string(&doc),
            revision: doc.revision,
        };
        self.store.create(&id, &stored, now(), self.expiry())?;
        Ok(id)
    }

    /// Tells the chat's listen streams, here and on every replica sharing
    /// the store, that its tool list changed.
    pub(super) fn announce(&self, chat: &str) {
        self.watchers.announce(chat);
        self.store.announce(chat);
    }

    /// Whether a live chat has `id`.
    ///
    /// # Errors
    /// The store's errors.
    pub fn has_chat(&self, id: &str) -> Result<bool, Error> {
        Ok(self.store.get(id, now())?.is_some())
    }

    /// Whose chat `id` is: `None` when no live chat has it, else the
    /// `owner` its document names (`None` there: started without a
    /// caller) and the agent it was planned for.
    ///
    /// # Errors
    /// The store's errors; a document that cannot be read.
    pub fn chat_owner(&self, id: &str) -> Result<Option<(Option<String>, String)>, Error> {
        let Some(stored) = self.store.get(id, now())? else {
            return Ok(None);
        };
        let doc = session::read(&stored.document, Path::new("chat"))?;
        Ok(Some((doc.owner, doc.agent.name)))
    }

    /// Ends the chat `id`; whether there was one.
    ///
    /// # Errors
    /// The store's errors.
    pub fn close_chat(&self, id: &str) -> Result<bool, Error> {
        self.store.delete(id)
    }

    /// Drops every chat expired now; how many.
    ///
    /// # Errors
    /// The store's errors.
    pub fn purge(&self) -> Result<u64, Error> {
        self.store.purge(now())
    }

    /// The chat's stored document, read.
    pub(super) fn stored(
        &self,
        chat: &str,
        id: &RawValue,
    ) -> Result<(Stored, crate::contract::SessionDocument), Failure> {
        let stored = self.fetched(chat, id)?;
        let doc = read(&stored, id)?;
        Ok((stored, doc))
    }

    /// The chat's stored document, as the store keeps it.
    fn fetched(&self, chat: &str, id: &RawValue) -> Result<Stored, Failure> {
        let failed = |code, message: String| Failure::new(Some(id.to_owned()), code, message);
        self.store
            .get(chat, now())
            .map_err(|e| failed(rpc::INTERNAL_ERROR, e.to_string()))?
            .ok_or_else(|| {
                failed(
                    rpc::CHAT_NOT_FOUND,
                    format!("no chat {chat:?} is kept: never started, ended, or expired; start a new one"),
                )
            })
    }

    /// The chat's session opened against generation `g`: its pin and loads
    /// re-checked. A pin that no longer holds is re-pinned under
    /// `[lock] chats = "follow"` (the `repin` module) and is
    /// [`rpc::TOOL_PIN_MISMATCH`] with the resume report under `"refuse"`.
    /// Returns the session and the document kept for the chat now.
    pub(super) fn live(
        &self,
        g: &Generation,
        chat: &str,
        mut stored: Stored,
        doc: crate::contract::SessionDocument,
        id: &RawValue,
    ) -> Result<Opening, Failure> {
        let mut doc = doc;
        for _ in 0..8 {
            match self.open_pinned(g, doc, id)? {
                Ok(live) => {
                    return Ok(Opening {
                        live,
                        stored,
                        repinned: None,
                    });
                }
                Err(report) => match self.follow(g, chat, &stored, report, id)? {
                    Followed::Done(opening) => return Ok(opening),
                    Followed::Stale => (stored, doc) = self.stored(chat, id)?,
                },
            }
        }
        Err(Failure::new(
            Some(id.to_owned()),
            rpc::INTERNAL_ERROR,
            "other requests kept changing this chat first; send the request again",
        ))
    }

    /// `doc` opened against `g`: the session when its pin holds, the resume
    /// report when it does not.
    fn open_pinned(
        &self,
        g: &Generation,
        doc: crate::contract::SessionDocument,
        id: &RawValue,
    ) -> Result<Result<Box<session::Live>, crate::contract::ResumeReport>, Failure> {
        let failed = |code, message: String| Failure::new(Some(id.to_owned()), code, message);
        let opened = {
            let mut cache = g.cache.lock().unwrap_or_else(|e| e.into_inner());
            session::open(
                &g.inputs,
                doc,
                &self.options.keys,
                Path::new("chat"),
                &mut cache,
            )
        };
        match opened {
            Ok(Opened::Live(live)) => Ok(Ok(live)),
            Ok(Opened::Mismatch(report)) => Ok(Err(report)),
            Err(e) => Err(failed(rpc::INTERNAL_ERROR, e.to_string())),
        }
    }

    /// The chat's stored document and its view under the current policies.
    /// When the chat was re-pinned on the way, the third member is the
    /// resume report saying what changed.
    pub(super) fn view(
        &self,
        chat: &str,
        id: &RawValue,
    ) -> Result<(Arc<View>, Stored, Option<crate::contract::ResumeReport>), Failure> {
        let failed = |code, message: String| Failure::new(Some(id.to_owned()), code, message);
        let stored = self.fetched(chat, id)?;
        let g = self.current.load();
        // A document this generation has read before, byte for byte, has
        // the view it had then: no parse, no key made (issue 31, item 5).
        let text = document_digest(&stored.document);
        if let Some(view) = lock(&g.documents).get(&text) {
            return Ok((view.clone(), stored, None));
        }
        let doc = read(&stored, id)?;
        let key = view_key(&doc);
        let cached = lock(&g.views).get(&key).cloned();
        if let Some(view) = cached {
            remember(&g.documents, text, &view);
            return Ok((view, stored, None));
        }
        let Opening {
            live,
            stored,
            repinned,
        } = self.live(&g, chat, stored, doc, id)?;
        let key = if repinned.is_some() {
            view_key(live.document())
        } else {
            key
        };
        let offered = OfferedPlan::from_json(&live.roster_json(), Path::new("chat"))
            .map_err(|e| failed(rpc::INTERNAL_ERROR, e.to_string()))?;
        let control = offered.control_tool_provider_name().map(str::to_string);
        let view = Arc::new(View {
            offered,
            tools: live.mcp_tools(),
            control,
        });
        {
            let mut views = lock(&g.views);
            if views.len() >= MAX_VIEWS {
                views.clear();
            }
            views.insert(key, view.clone());
        }
        if repinned.is_none() {
            remember(&g.documents, text, &view);
        }
        Ok((view, stored, repinned))
    }
}

/// `stored`'s document read, as request `id` fails when it cannot be.
fn read(stored: &Stored, id: &RawValue) -> Result<crate::contract::SessionDocument, Failure> {
    session::read(&stored.document, Path::new("chat"))
        .map_err(|e| Failure::new(Some(id.to_owned()), rpc::INTERNAL_ERROR, e.to_string()))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// What [`Generation::documents`] knows a stored document by: the SHA-256
/// of its text, so two documents share an entry only when they are the
/// same bytes.
fn document_digest(text: &str) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(text.as_bytes()).into()
}

/// Notes that the document of digest `text` has `view`: at most
/// [`MAX_DOCUMENTS`] entries, all dropped when full (each is rebuilt from
/// [`Generation::views`] on its next use).
fn remember(documents: &Mutex<HashMap<[u8; 32], Arc<View>>>, text: [u8; 32], view: &Arc<View>) {
    let mut documents = lock(documents);
    if documents.len() >= MAX_DOCUMENTS {
        documents.clear();
    }
    documents.insert(text, view.clone());
}

/// What decides a chat's view: its document without the fields that differ
/// between chats with the same pins and loads (id, revision, signature).
fn view_key(doc: &crate::contract::SessionDocument) -> String {
    let mut doc = doc.clone();
    doc.id = None;
    doc.revision = 0;
    doc.signature = None;
    doc.owner = None;
    for loaded in &mut doc.loaded {
        loaded.revision = 0;
    }
    crate::canon::hex(&crate::canon::digest(
        &serde_json::to_value(&doc).unwrap_or_default(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::CheckOptions;

    /// A gateway over a snapshot of `n` tools, 3 offered, the rest deferred.
    fn gateway(n: usize) -> (tempfile::TempDir, Gateway) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("mcp")).unwrap();
        std::fs::write(
            dir.path().join("muster.toml"),
            "[caps]\nitems = 3\ntokens = 9000\n[deferral]\nenabled = true\n\
             [[agent]]\nname = \"chat\"\nversion = 1\ndefault = true\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("mcp/kb.toml"),
            "[[mcp]]\nname = \"kb\"\nsnapshot = \"kb.json\"\n",
        )
        .unwrap();
        let tools: Vec<Value> = (0..n)
            .map(|i| {
                serde_json::json!({"name": format!("record_{i}"),
                    "description": format!("Look up the {i}th record of the ledger."),
                    "inputSchema": {"type": "object"}})
            })
            .collect();
        std::fs::write(
            dir.path().join("mcp/kb.json"),
            serde_json::json!({ "tools": tools }).to_string(),
        )
        .unwrap();
        let options = Options {
            selection: Selection::default(),
            keys: SessionKeys::none(),
            ttl: Duration::from_secs(60),
            check: CheckOptions::default(),
            log_arguments: false,
        };
        let inputs = Inputs::load(dir.path()).unwrap();
        let store = Box::new(crate::store::MemoryStore::default());
        let gateway = Gateway::new(inputs, options, store, Box::new(|_| {})).unwrap();
        (dir, gateway)
    }

    fn listed(gateway: &Gateway, chat: &str) -> Vec<String> {
        let id = RawValue::from_string("1".into()).unwrap();
        let text = gateway.list(chat, &id, None, false).unwrap();
        let list: Value = serde_json::from_str(&text).unwrap();
        list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    }

    /// Issue 31, item 5: a chat's view is found by its stored document's digest; a load
    /// changes the document, so the next request reads the new one and sees the loaded tool,
    /// and a chat with the same pins but its own document shares the first chat's view.
    #[tokio::test]
    async fn a_view_follows_its_document_and_is_shared_by_equal_pins() {
        let (_dir, gateway) = gateway(12);
        let chat = gateway.open_chat(Some("a".into()), None).unwrap();
        let other = gateway.open_chat(Some("b".into()), None).unwrap();
        let before = listed(&gateway, &chat);
        assert_eq!(before.len(), 3, "{before:?}");
        let id = RawValue::from_string("1".into()).unwrap();
        let (first, _, _) = gateway.view(&chat, &id).unwrap();
        let (again, _, _) = gateway.view(&chat, &id).unwrap();
        let (shared, _, _) = gateway.view(&other, &id).unwrap();
        assert!(Arc::ptr_eq(&first, &again) && Arc::ptr_eq(&first, &shared));
        assert_eq!(gateway.current.load().documents.lock().unwrap().len(), 2);

        let control = &before[0];
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"{control}","arguments":{{"query":"the 11th record of the ledger"}}}}}}"#
        );
        let reply = gateway.handle(&chat, call.as_bytes()).await;
        assert!(reply.list_changed, "{:?}", reply.response);
        let after = listed(&gateway, &chat);
        assert!(after.len() > before.len(), "{after:?}");
        assert!(after.iter().any(|t| t.ends_with("record_11")), "{after:?}");
        assert_eq!(
            listed(&gateway, &other),
            before,
            "the other chat loaded nothing"
        );
    }
}
