// MERGE QUEUE DASHBOARD — placeholder.
//
// The merge queue (requests by state with their classification, wait and
// merge time, validation results keyed by candidate commit, the review
// queue with approve/reject, and the report of the day as charts) is being
// built in parallel with the console; its API is not there yet. This page
// is where its dashboard goes: fill it in from the queue's documented
// endpoints in rest/floeapi/openapi.yaml once they land, through api.ts
// like every other page.

export function QueuePage() {
  return (
    <>
      <h1>Merge queue</h1>
      <p class="note" role="status" id="queue-placeholder">
        The merge-queue dashboard is not part of this build yet: it arrives with the merge queue's API.
      </p>
    </>
  );
}
