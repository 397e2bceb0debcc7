package floe.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.projectnessie.client.NessieClientBuilder;
import org.projectnessie.client.api.NessieApiV2;
import org.projectnessie.client.auth.BearerAuthenticationProvider;
import org.projectnessie.client.rest.NessieNotAuthorizedException;
import org.projectnessie.error.NessieForbiddenException;
import org.projectnessie.model.Branch;
import org.projectnessie.model.CommitMeta;
import org.projectnessie.model.ContentKey;
import org.projectnessie.model.Namespace;
import org.projectnessie.model.Operation;

/**
 * Nessie's Java client against a floe that authenticates and authorizes:
 * bearer tokens through the client's own BearerAuthenticationProvider, and
 * floe's default policy (ingest/ branches for group ingest, main written
 * only through merges by group publishers). The URI comes from
 * -Dfloe.secure.uri, the tokens from -Dfloe.token.publisher and
 * -Dfloe.token.ingest (run.sh writes them into a token file for floe).
 */
class SecuredNessieClientTest {
  private static String uri;
  private static NessieApiV2 publisher;
  private static NessieApiV2 ingest;
  private static NessieApiV2 anonymous;

  private static NessieApiV2 client(String token) {
    NessieClientBuilder b = NessieClientBuilder.createClientBuilder(null, null).withUri(uri);
    if (token != null) {
      b = b.withAuthentication(BearerAuthenticationProvider.create(token));
    }
    return b.build(NessieApiV2.class);
  }

  @BeforeAll
  static void connect() {
    uri = System.getProperty("floe.secure.uri");
    assertNotNull(uri, "set -Dfloe.secure.uri=http://host:port/api/v2 (run.sh does)");
    publisher = client(System.getProperty("floe.token.publisher"));
    ingest = client(System.getProperty("floe.token.ingest"));
    anonymous = client(null);
  }

  @AfterAll
  static void close() {
    for (NessieApiV2 api : new NessieApiV2[] {publisher, ingest, anonymous}) {
      if (api != null) {
        api.close();
      }
    }
  }

  private static Branch main(NessieApiV2 api) throws Exception {
    return (Branch) api.getReference().refName("main").get();
  }

  @Test
  void withoutTokenNotAuthorized() {
    assertThrows(NessieNotAuthorizedException.class, () -> anonymous.getReference().refName("main").get());
    NessieApiV2 bad = client("not-a-token");
    try {
      assertThrows(NessieNotAuthorizedException.class, () -> bad.getReference().refName("main").get());
    } finally {
      bad.close();
    }
  }

  @Test
  void branchWriteMergeByPolicy() throws Exception {
    String name = "ingest/" + UUID.randomUUID().toString().substring(0, 8);
    Branch main = main(ingest);
    Branch branch = (Branch) ingest.createReference().sourceRefName("main").reference(Branch.of(name, main.getHash())).create();
    String ns = "raw_" + UUID.randomUUID().toString().substring(0, 8);
    branch = ingest.commitMultipleOperations()
        .branch(branch)
        .commitMeta(CommitMeta.fromMessage("create namespace"))
        .operation(Operation.Put.of(ContentKey.of(ns), Namespace.of(ns)))
        .commit();

    // The ingest principal may not write main, directly or by merging.
    Branch mainNow = main(ingest);
    NessieForbiddenException direct = assertThrows(NessieForbiddenException.class, () -> ingest.commitMultipleOperations()
        .branch(mainNow)
        .commitMeta(CommitMeta.fromMessage("direct"))
        .operation(Operation.Put.of(ContentKey.of(ns + "_direct"), Namespace.of(ns + "_direct")))
        .commit());
    assertTrue(direct.getMessage().contains("main is written only through merges"), direct.getMessage());
    Branch from = branch;
    assertThrows(NessieForbiddenException.class, () -> ingest.mergeRefIntoBranch().branch(mainNow).fromRef(from).merge());
    assertEquals(mainNow.getHash(), main(publisher).getHash());

    // A publisher's merge lands, and main then holds the namespace.
    publisher.mergeRefIntoBranch().branch(mainNow).fromRef(from).merge();
    assertTrue(publisher.getContent().refName("main").key(ContentKey.of(ns)).get().containsKey(ContentKey.of(ns)));
  }
}
