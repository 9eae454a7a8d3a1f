// Progress alone is not an outcome: a callback send needs `onSuccess`, `onFailure` or `onFinished`.
// expect: missing argument for parameter 'onSuccess' in call
import Switchboard

func upload() {
    Center.shared.send { $0.api = "upload" } onProgress: { progress in print(progress.completed) }
}
