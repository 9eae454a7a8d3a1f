// `sendBatch` is the callback form of `batch`, so it needs a callback too.
// expect: missing argument for parameter 'onSuccess' in call
import Switchboard

func refresh() {
    Center.shared.sendBatch { batch in batch.add { $0.api = "a" } }
}
